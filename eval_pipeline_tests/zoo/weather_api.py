"""The weather web API that the zoo's ``web_api_tools`` agent calls over HTTP.

``weather_api()`` returns a Starlette app (serve it with model_server.BackgroundServer and
set WEATHER_API_URL to its base URL):

- ``GET /weather?city=Paris`` → ``{"city": "Paris", "forecast": "sunny, 18 C"}``
- ``GET /time?city=Paris`` → ``{"city": "Paris", "time": "14:00"}``

An unknown city gets 200 with "unknown city" as its forecast / time (like the tools of the
other agents); a request without ``city`` gets 400. ``app.state.stats`` counts requests:
``requests`` in all, per path under ``by_path`` ("/weather", "/time"), and keeps every
distinct path and query under ``seen``.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

WEATHER = {"paris": "sunny, 18 C", "oslo": "snow, -3 C", "tokyo": "rain, 12 C", "lima": "fog, 16 C"}
TIMES = {"paris": "14:00", "oslo": "14:00", "tokyo": "22:00", "lima": "08:00"}


def weather_api() -> Starlette:
    stats: dict[str, Any] = {"requests": 0, "by_path": {}, "seen": set()}

    def count(request: Request) -> str | None:
        stats["requests"] += 1
        path = request.url.path
        stats["by_path"][path] = stats["by_path"].get(path, 0) + 1
        stats["seen"].add(f"{path}?{request.url.query}")
        return request.query_params.get("city")

    def missing_city() -> JSONResponse:
        return JSONResponse({"error": "the query parameter 'city' is required"}, status_code=400)

    async def weather(request: Request) -> JSONResponse:
        city = count(request)
        if not city:
            return missing_city()
        return JSONResponse({"city": city, "forecast": WEATHER.get(city.lower(), "unknown city")})

    async def time(request: Request) -> JSONResponse:
        city = count(request)
        if not city:
            return missing_city()
        return JSONResponse({"city": city, "time": TIMES.get(city.lower(), "unknown city")})

    app = Starlette(routes=[Route("/weather", weather), Route("/time", time)])
    app.state.stats = stats
    return app
