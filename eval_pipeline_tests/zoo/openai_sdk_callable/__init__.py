"""No LangGraph: the raw ``openai`` SDK function-calling loop (OpenAI's function-calling
guide / cookbook) as our callable contract. Callable: ``agent:answer``."""
