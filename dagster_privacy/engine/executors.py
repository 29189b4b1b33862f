"""Where the engine's independent blocks run: one seam, two implementations.

    neighbors.knn_*(query, ref, k, executor), chunks.map_chunks, the attacks' jobs
        │  shared = the encoded sides / a job's tables (put once), items = fixed tiles, chunks or jobs
        ▼
    Executor.map(fn, shared, items) ──▶ [fn(shared, item) for each item]   (small results back:
                                                                           indices, distances, counts)
    Executor.imap(...): the same results in order, each handed on as it is done (a paired query keeps
                        only its rows' candidates of each cell: pairs.py)
        ├─ InProcess: blocks side by side on threads in this process (the default)
        └─ RayExecutor: ``ray.put(shared)`` once (zero-copy per node), one Ray task per item

The tiles are a function of the table sizes only, never of the executor or the number of workers, and
every block runs with a single-threaded BLAS (a multi-threaded sgemm rounds differently on some
kernels: measured here, 2 threads moved a float32 near-tie and with it dcr by 4e-9 and one row of
identifiability). Parallelism comes from running blocks side by side — threads here, tasks on Ray — so
every executor computes the same blocks with the same arithmetic and the results are identical.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from threadpoolctl import threadpool_limits

from .. import allocator  # noqa: F401  (on import: glibc's mmap threshold fixed)
from ..errors import Aborted

T = TypeVar("T")


class ExecutorError(Aborted):
    """An executor that cannot be used (Ray missing, a cluster that cannot be reached or lost mid-run):
    one line, and the evaluation ends (the CLI exits 2, never with the verdict's codes)."""


class Executor(Protocol):
    name: str

    def map(self, fn: Callable[[Any, Any], T], shared: Any, items: Sequence[Any]) -> list[T]:
        """``[fn(shared, item) for item in items]``, in order; ``shared`` is read-only."""
        ...


_BLAS_LOCK = threading.Lock()
_BLAS_USERS = 0
_BLAS_SAVED: Any = None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread while any caller in this process needs it. The limit is process-wide, so
    overlapping callers (two evaluations in two threads) share one count: the first sets it, the last
    restores the original; a plain nested ``threadpool_limits`` would restore too early."""
    global _BLAS_USERS, _BLAS_SAVED
    with _BLAS_LOCK:
        if _BLAS_USERS == 0:
            _BLAS_SAVED = threadpool_limits(limits=1, user_api="blas")
        _BLAS_USERS += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_USERS -= 1
            if _BLAS_USERS == 0:
                _BLAS_SAVED.restore_original_limits()
                _BLAS_SAVED = None


def single_threaded(fn: Callable[[Any, Any], T], shared: Any, item: Any) -> T:
    """One block with a single-threaded BLAS (what a Ray task runs)."""
    with one_blas_thread():
        return fn(shared, item)


class InProcess:
    """Every block in this process: side by side on ``workers`` threads (numpy releases the GIL in its
    products and reductions), each block with a single-threaded BLAS, so the arithmetic is a Ray task's."""

    name = "in-process"

    def __init__(self, workers: int | None = None) -> None:
        self._workers = workers

    @property
    def workers(self) -> int:
        """As many as the evaluation's thread count (threads.py: the CPUs given, never the machine's)."""
        from ..threads import thread_count

        return self._workers or thread_count()

    def map(self, fn: Callable[[Any, Any], T], shared: Any, items: Sequence[Any]) -> list[T]:
        return list(self.imap(fn, shared, items))

    def imap(self, fn: Callable[[Any, Any], T], shared: Any, items: Sequence[Any]) -> Iterator[T]:
        """As map, each result handed on in order as it is done (the caller keeps what it needs of it)."""
        # the BLAS limit is process-wide: held once around all blocks, never per thread
        workers = self.workers
        with one_blas_thread():
            if workers <= 1 or len(items) <= 1:
                yield from (fn(shared, item) for item in items)
                return
            with ThreadPoolExecutor(max_workers=workers) as pool:
                yield from pool.map(lambda item: fn(shared, item), items)


IN_PROCESS = InProcess()


class RayExecutor:
    """Blocks as Ray tasks: the shared sides are put in the object store once per call, each task gets
    a reference to them and one item, and returns only its small result (indices and distances of a
    tile, per-row counts of a chunk, a job's figures).

    ``address``: ``"local"`` starts a Ray on this machine (``init_options`` such as ``num_cpus``,
    ``object_store_memory`` apply); ``"auto"`` joins the cluster this machine belongs to (``RAY_ADDRESS``
    or a running head); ``"ray://HOST:10001"`` connects a client to a remote head. ``None``: Ray is
    already initialised by the caller (a ``dagster_ray`` resource, for instance).

    Args:
        address: ``"local"`` (default), ``"auto"``, ``"ray://HOST:PORT"`` or None, as above; a bare
            ``HOST:PORT`` is refused.
        init_options: further keywords of ``ray.init`` (``num_cpus``, ``object_store_memory``, …).

    Raises:
        ExecutorError: an address of another form; the ``ray`` package missing, or a cluster that cannot
            be started or reached (when it connects).

    Example:
        ``evaluate(real, synthetic, holdout=holdout, executor=RayExecutor("ray://head:10001"))``
    """

    name = "ray"

    def __init__(self, address: str | None = "local", *, init_options: dict[str, Any] | None = None) -> None:
        # a bare HOST:PORT is a GCS address for a cluster's own nodes: Ray retries it for minutes and
        # ignores SIGTERM meanwhile, so only the three forms that fail fast are accepted
        if address is not None and address not in ("local", "auto") and not address.startswith("ray://"):
            raise ExecutorError(f"Ray address {address!r}: give local, auto or ray://HOST:PORT")
        self.address = address
        self.init_options = dict(init_options or {})
        self._remote: dict[Callable[..., Any], Any] = {}  # the remote wrapper, made once

    def connect(self) -> Any:
        """Initialise (or join) Ray now; ExecutorError with one line when it cannot."""
        try:
            import ray
        except ImportError:
            raise ExecutorError(
                "the Ray executor needs the `ray` package: pip install 'dagster-privacy[ray]'"
            ) from None
        with _CONNECTING:  # fd 2 is process-wide: one connection attempt holds it at a time
            return self._connect(ray)

    def _connect(self, ray: Any) -> Any:
        if not ray.is_initialized():
            if self.address is None:
                raise ExecutorError(
                    "Ray is not initialised: give an address (local, auto or ray://HOST:PORT)"
                )
            with _stderr_held() as held:
                try:
                    ray.init(
                        address=None if self.address == "local" else self.address,
                        include_dashboard=False,
                        log_to_driver=False,
                        configure_logging=False,
                        **self.init_options,
                    )
                except Exception as exc:  # a cluster that cannot be reached: one line, no library message
                    held.drop()
                    hint = (
                        ": it refused this process's token (InvalidAuthToken); set RAY_AUTH_TOKEN or "
                        "RAY_AUTH_TOKEN_PATH to the cluster's"
                        if b"InvalidAuthToken" in held.text()
                        else ""
                    )
                    raise ExecutorError(
                        f"cannot start or reach Ray at {self.address!r} ({type(exc).__name__}){hint}"
                    ) from None
        return ray

    def map(self, fn: Callable[[Any, Any], T], shared: Any, items: Sequence[Any]) -> list[T]:
        return list(self.imap(fn, shared, items))

    def imap(self, fn: Callable[[Any, Any], T], shared: Any, items: Sequence[Any]) -> Iterator[T]:
        """As map, each result fetched in order once it is done: the ones waiting stay in the object store."""
        if not items:
            return
        ray = self.connect()
        # a task's error left unretrieved is logged with its message, which may quote a value (read by
        # Ray when the error happens: set for a Ray initialised by the caller too)
        os.environ.setdefault("RAY_IGNORE_UNHANDLED_ERRORS", "1")
        task = self._remote.get(single_threaded)
        if task is None:
            task = self._remote[single_threaded] = ray.remote(num_cpus=1)(single_threaded)
        try:
            ref = ray.put(shared)
            refs = [task.remote(fn, ref, item) for item in items]
            for one in refs:
                self._wait(ray, [one])
                yield ray.get(one)
        except ray.exceptions.RayTaskError as exc:  # our function raised: that metric's error, as here
            if isinstance(exc.cause, Aborted):  # ours, raised in a task: its own line, not Ray's wrapper
                raise type(exc.cause)(str(exc.cause)) from None
            raise
        except (ray.exceptions.RayError, ConnectionError) as exc:  # a node, worker or object lost
            raise ExecutorError(
                f"the Ray cluster {self._where()} failed mid-run ({type(exc).__name__}: a node, worker or "
                "object was lost, or a worker crashed): no verdict"
            ) from None

    def _where(self) -> str:
        return f"at {self.address!r}" if self.address else "the caller initialised"

    def _wait(self, ray: Any, refs: list[Any]) -> None:
        """Wait for ``refs`` while the cluster's control store (GCS) and this node's raylet answer.
        When either stops (the cluster was shut down or killed), a plain ``ray.get`` waits for ever, or
        Ray's core ends this process with exit 1 — the code of a failing verdict — after 10 to 60 s and
        a page of its own logs: fail first, with one line."""
        vital = _vital_endpoints(ray)
        pending, silent = refs, 0
        while pending:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=PROBE_SECONDS)
            lost = [f"{name} at {host}:{port}" for name, (host, port) in vital.items()
                    if pending and not _answers((host, port))]  # fmt: skip
            silent = silent + 1 if lost else 0
            if silent >= PROBES_LOST:  # gone for several probes, not a blip
                raise ExecutorError(
                    f"the Ray cluster {self._where()} stopped answering mid-run ({', '.join(lost)} gone "
                    f"for {silent} probes): no verdict"
                )


class _Held:
    def __init__(self, file: Any) -> None:
        self.file, self.dropped = file, False

    def text(self) -> bytes:
        if self.file is None:
            return b""
        self.file.seek(0)
        return self.file.read()

    def drop(self) -> None:
        self.dropped = True


@contextlib.contextmanager
def _stderr_held() -> Iterator[_Held]:
    """The process's standard error (fd 2: Ray's C++ core writes there) held in a file while Ray
    connects, then replayed — unless dropped: a failed connection retries for about 20 s, a line each
    (InvalidAuthToken, unreachable GCS), and our one line says it instead."""
    import tempfile

    try:
        if sys.stderr is not None:
            sys.stderr.flush()
        saved = os.dup(2)
    except OSError:  # no standard error to hold (fd 2 closed): Ray writes where it can
        yield _Held(None)
        return
    with tempfile.TemporaryFile() as file:
        held = _Held(file)
        os.dup2(file.fileno(), 2)
        try:
            yield held
        finally:
            if sys.stderr is not None:
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if not held.dropped:
                os.write(2, held.text())


#: how often a Ray wait checks that the cluster still answers, and after how many failed probes in a
#: row it is lost: ~4 s, well before Ray's core ends a process whose raylet died (~10 s), past a blip
PROBE_SECONDS = 2.0
PROBES_LOST = 2
_CONNECTING = threading.Lock()


def _vital_endpoints(ray: Any) -> dict[str, tuple[str, int]]:
    """The control store (GCS) and this node's raylet, as (host, port); none for a Ray Client
    connection, whose lost server raises ConnectionError itself."""
    out: dict[str, tuple[str, int]] = {}
    try:
        if ray.util.client.ray.is_connected():
            return out
        ctx = ray.get_runtime_context()
        host, _, port = str(ctx.gcs_address).rpartition(":")
        out["its control store"] = (host.strip("[]"), int(port))
        me = ctx.get_node_id()
        for node in ray.nodes():
            if node.get("NodeID") == me and node.get("Alive"):
                out["this node's raylet"] = (str(node["NodeManagerAddress"]), int(node["NodeManagerPort"]))
    except Exception:  # an address we cannot read: not probed, ray.get decides
        pass
    return out


def _answers(endpoint: tuple[str, int], timeout: float = 2.0) -> bool:
    """Whether a TCP connection to ``endpoint`` opens."""
    try:
        with socket.create_connection(endpoint, timeout=timeout):
            return True
    except OSError:
        return False


def results(
    executor: Executor, fn: Callable[[Any, Any], T], shared: Any, items: Sequence[Any]
) -> Iterator[T]:
    """``executor.map``'s results in order as they are done, where the executor can hand them on
    (``imap``); from an executor with ``map`` only, or whose own ``map`` is more derived than its
    ``imap`` (a subclass that overrides ``map`` alone), all at once through that ``map``."""
    mro = type(executor).__mro__
    owner = {name: next((c for c in mro if name in vars(c)), None) for name in ("map", "imap")}
    if owner["imap"] is not None and owner["map"] is not None and issubclass(owner["imap"], owner["map"]):
        return executor.imap(fn, shared, items)  # type: ignore[attr-defined]
    return iter(executor.map(fn, shared, items))


def executor_for(spec: str | Executor | None) -> Executor:
    """An executor from an argument: None or ``"in-process"``; ``"local"``, ``"auto"`` or ``ray://HOST:PORT``;
    or an Executor as it is."""
    if spec is None or spec == "in-process":
        return IN_PROCESS
    if isinstance(spec, str):
        return RayExecutor(spec)
    if isinstance(spec, RayExecutor):
        return spec
    if not callable(getattr(spec, "map", None)):
        raise ExecutorError("an executor needs a map(fn, shared, items) method")
    return spec


__all__ = [
    "Executor",
    "ExecutorError",
    "IN_PROCESS",
    "InProcess",
    "RayExecutor",
    "executor_for",
    "one_blas_thread",
    "results",
    "single_threaded",
]
