"""Imitates langchain-ai/docs: src/oss/quickstart.mdx (prebuilt ``create_react_agent``),
wrapped in a factory: ``agent:build_graph`` (``ctx`` optional)."""
