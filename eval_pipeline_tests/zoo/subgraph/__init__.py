"""Imitates langchain-ai/docs: src/oss/langgraph/use-subgraphs.mdx ("Add a subgraph as a
node", shared ``messages`` key). Parent graph: ``agent:graph``."""
