"""Imitates langchain-ai/docs: src/oss/2-add-tools.mdx ("9. Use prebuilts") — the chatbot
tutorial's sync StateGraph with ToolNode + tools_condition. The graph is ``agent:graph``."""
