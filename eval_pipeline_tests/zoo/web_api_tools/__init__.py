"""A sync LangGraph agent whose tools call a weather web API over HTTP (WEATHER_API_URL;
see ../weather_api.py). Graph: ``agent:graph``."""
