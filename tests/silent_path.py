"""A TCP path on loopback that can die silently, as a NAT that dropped a mapping or a laptop that slept does.

`SilentPath(port)` listens on a free loopback port and carries each connection to `port`. `cut()` stops carrying
every connection open at that moment without closing or resetting either end: both keep their sockets open,
what each sends is read and dropped, and an end's close is not passed on. Nothing tells either side, so only a
client that checks its connection notices. Connections made after the cut are carried as before (the path came
back for new ones), which is what a reconnect needs.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field


@dataclass(eq=False)
class _Link:
    writers: list[asyncio.StreamWriter] = field(default_factory=list)
    cut: bool = False


class SilentPath:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> SilentPath:
        self._server = await asyncio.start_server(self._carry, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for link in self._links:
            for writer in link.writers:
                writer.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def cut(self) -> int:
        """Stop carrying every connection open now, silently; how many there were."""
        live = [link for link in self._links if not link.cut]
        for link in live:
            link.cut = True
        return len(live)

    async def _carry(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        link = _Link([writer])
        self._links.add(link)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
            link.writers.append(up_writer)
            await asyncio.gather(self._pump(reader, up_writer, link), self._pump(up_reader, writer, link))
        except (ConnectionError, OSError):
            pass
        finally:
            self._tasks.discard(task)
            if not link.cut:
                self._links.discard(link)
                for end in link.writers:
                    end.close()

    @staticmethod
    async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, link: _Link) -> None:
        while data := await source.read(65536):
            if link.cut:
                continue  # read and dropped: neither end's buffers fill, neither end hears of it
            sink.write(data)
            with contextlib.suppress(ConnectionError):
                await sink.drain()
        if link.cut:
            await asyncio.Event().wait()  # the other end never hears of this end's close
        sink.close()
