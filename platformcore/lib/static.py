"""WhiteNoise's static files middleware, made async-capable.

WhiteNoise's own middleware is sync-only, so under ASGI Django wrapped it in a thread hop and
the rest of the chain in another (async → sync → async) on every request, static or not. Here
a request that is not for a static file goes straight on in whichever mode the chain runs;
a static file is served as WhiteNoise serves it.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(get_response, *args, **kwargs)
        self._async = iscoroutinefunction(get_response)
        if self._async:
            markcoroutinefunction(self)

    def __call__(self, request: Any) -> Any:
        if self._async:
            return self._acall(request)
        return super().__call__(request)

    async def _acall(self, request: Any) -> Any:
        static_file = (
            self.find_file(request.path_info)
            if self.autorefresh
            else self.files.get(request.path_info)
        )
        if static_file is not None:
            return self.serve(static_file, request)
        return await self.get_response(request)
