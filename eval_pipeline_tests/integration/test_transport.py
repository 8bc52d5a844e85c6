"""The model client's connections: the cheaper idle-connection probe answers as httpx's."""

import asyncio

from eval_pipeline.llm.factory import create_chat_model
from eval_pipeline.llm.model_settings import LLMSettings
from eval_pipeline.llm.transport import SocketKeepingBackend
from eval_pipeline_tests.model_server import LocalOpenAIServer


def test_idle_probe_sees_a_connection_the_server_closed():
    async def scenario() -> tuple[bool, bool, str]:
        closing = asyncio.Event()

        async def serve(reader, writer):
            await closing.wait()
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        stream = await SocketKeepingBackend().connect_tcp("127.0.0.1", port)
        open_idle = stream.get_extra_info("is_readable")
        closing.set()
        await asyncio.sleep(0.2)
        closed = stream.get_extra_info("is_readable")
        peer = stream.get_extra_info("server_addr")  # everything else: the inner stream's
        await stream.aclose()
        server.close()
        return open_idle, closed, peer

    open_idle, closed, peer = asyncio.run(scenario())
    assert not open_idle and closed
    assert peer[0] == "127.0.0.1"


def test_model_client_pools_on_the_socket_keeping_backend():
    with LocalOpenAIServer() as server:
        settings = LLMSettings.create(base_url=server.base_url, api_key="k", model="offline")
        model = create_chat_model(settings)
        pool = model.root_async_client._client._transport._pool
        assert isinstance(pool._network_backend, SocketKeepingBackend)
        answer = asyncio.run(model.ainvoke("hi"))
        assert answer.content and server.requests == 1
