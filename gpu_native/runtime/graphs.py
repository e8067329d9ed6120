"""CUDA graphs: capture a sequence of launches once, replay it with one call.

.. code-block:: python

    with gn.Graph() as graph:
        step.launch(grid, block, 0, graph.stream)(a, b)
        step.launch(grid, block, 0, graph.stream)(b, a)
    for _ in range(1000):
        graph.replay()
    graph.synchronize()

Launches on ``graph.stream`` inside the ``with`` block are recorded, not run (their arguments are
checked as usual).  The graph keeps every array it captured alive for as long as it exists, so
replays never touch freed memory.  Device errors of replayed kernels are raised by
``graph.synchronize()`` (and by ``gn.synchronize()``).  On the simulator a graph records the
launches and replays them in order.
"""

from __future__ import annotations

from ..errors import GpuNativeError
from ..tracebacks import boundary
from . import backend as B
from . import driver as D
from .devices import current_device
from .records import raise_pending
from .streams import DEFAULT_STREAM, Stream, as_stream


class CaptureStream(Stream):
    """The stream a :class:`Graph` captures launches from (non-blocking, so that work on the
    legacy default stream — allocations, frees, copies — stays legal during a capture)."""

    __slots__ = ("graph",)

    def __init__(self, graph: Graph):
        backend = B.select()
        handle = None
        if backend.name == "cuda":
            drv = D.driver()
            handle = D.check(drv.cuStreamCreate(drv.CUstream_flags.CU_STREAM_NON_BLOCKING))
        super().__init__(_handle=handle, name="graph capture")
        if handle is not None:
            self._owned = True
        self.graph = graph


class Graph:
    """A captured sequence of kernel launches (see the module documentation)."""

    def __init__(self) -> None:
        self.stream = CaptureStream(self)
        self._captured: list = []  # (launcher, args): keeps arguments alive; the simulator replays
        self._capturing = False
        self._graph: object = None  # the CUgraph and CUgraphExec, once captured
        self._exec: object = None
        self._ended = False  # a capture ended without an exception (the simulator's _exec)
        self.launches = 0

    def __enter__(self) -> Graph:
        if self._exec is not None or self._captured:
            raise GpuNativeError("this graph was captured already; create a new gn.Graph()")
        backend = B.select()
        if backend.name == "cuda":
            drv = D.driver()
            mode = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
            D.check(drv.cuStreamBeginCapture(self.stream._handle, mode), "beginning a capture")
        self._capturing = True
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._capturing = False
        backend = B.select()
        if backend.name != "cuda":
            # As the GPU's: a capture that raised leaves nothing to replay.
            if exc_type is not None:
                self._captured.clear()
                self.launches = 0
            else:
                self._ended = True
            return
        drv = D.driver()
        graph = D.check(drv.cuStreamEndCapture(self.stream._handle), "ending the capture")
        if exc_type is not None:
            drv.cuGraphDestroy(graph)
            return
        self._graph = graph
        self._exec = D.check(drv.cuGraphInstantiate(graph, 0), "instantiating the graph")

    def record(self, launcher, args: tuple) -> None:
        """Called by launches on :attr:`stream` while capturing."""
        if not self._capturing:
            raise GpuNativeError("graph.stream can only be launched on inside `with graph:`")
        self._captured.append((launcher, args))
        self.launches += 1
        if B.select().name == "cuda":
            launcher(*args)

    @boundary
    def replay(self, stream=DEFAULT_STREAM) -> None:
        """Run the captured launches, in order, on ``stream``."""
        backend = B.select()
        target = as_stream(stream)    # the simulator refuses what the GPU refuses
        if self._exec is None and not self._ended:
            raise GpuNativeError("nothing was captured: launch on graph.stream inside "
                                 "`with graph:` first")
        if backend.name != "cuda":
            for launcher, args in self._captured:
                launcher(*args)
            return
        handle, _ = target._resolve(current_device())
        D.check(D.driver().cuGraphLaunch(self._exec, handle), "replaying the graph")

    @boundary
    def synchronize(self) -> None:
        """Wait for the device, then raise any error a replayed kernel reported."""
        B.select().device_sync()
        _, slot = self.stream._resolve(self.stream.device)
        raise_pending(slot)
        raise_pending(None)

    def __del__(self) -> None:
        try:
            backend = B.select()
            if backend.name == "cuda":
                if self._exec is not None:
                    D.driver().cuGraphExecDestroy(self._exec)
                if self._graph is not None:
                    D.driver().cuGraphDestroy(self._graph)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass
