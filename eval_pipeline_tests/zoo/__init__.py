"""The agent zoo: small weather/time agents written the way LangGraph's own docs, examples
and templates write them (not the way this project would), so the pipeline is tested
against agents it did not shape.

One package directory per style (``<style>/__init__.py`` + ``agent.py``, plus whatever
modules the imitated source splits out). Each agent is self-contained: its own copy of the
WEATHER / TIMES tables, its own model built from OPENAI_BASE_URL / OPENAI_API_KEY in the
environment (model ``gpt-4o-mini``), and the good system prompt "You are a weather
assistant. Use the tools for every weather or time question." Each module's docstring
cites the source it imitates and the habit of that source it keeps. ``weather_api.py`` is
the HTTP weather service the ``web_api_tools`` agent calls.

Nothing here is imported by the project under test; tests copy a style's directory into a
temporary directory and import it from there, as a team's own code would be imported.
"""
