"""The peers of ``taskforge bench peer``: other PostgreSQL job queues draining the same no-op jobs.

One module per peer, on shared parts:

* :mod:`.base`      what a peer provides (:class:`~.base.Peer`) and the records of a trial
* :mod:`.runtimes`  a virtualenv per Python peer, an npm prefix per Node.js peer; the apps' commands
* :mod:`.trial`     the trial every peer runs (warm-up excluded, timing from the database clock)
* :mod:`.procrastinate`, :mod:`.graphile_worker`, :mod:`.pg_boss`, :mod:`.pgqueuer`, :mod:`.oban`

Each peer runs in two modes: ``single`` at E1's process counts (one slot per process) and
``batched`` (one process in the setting its own documentation recommends for throughput),
beside E1 batched. The apps are ``bench/peer/<peer>_app.{py,js}``.
"""

from __future__ import annotations

from .base import Installed, Mode, Peer, PeerError, PeerUnavailable
from .graphile_worker import GraphileWorker
from .oban import Oban
from .pg_boss import PgBoss
from .pgqueuer import Pgqueuer
from .procrastinate import Procrastinate
from .trial import run_peer_trial

__all__ = [
    "NAMES",
    "PEERS",
    "PYTHON_PEERS",
    "Installed",
    "Mode",
    "Peer",
    "PeerError",
    "PeerUnavailable",
    "run_peer_trial",
]

#: Every peer by name, in report order.
PEERS: dict[str, Peer] = {peer.name: peer for peer in (GraphileWorker(), PgBoss(), Pgqueuer(), Oban(), Procrastinate())}
NAMES: tuple[str, ...] = tuple(PEERS)
#: The peers written in Python (TaskForge's worker is too): the 3x target applies to them.
PYTHON_PEERS: tuple[str, ...] = tuple(name for name, peer in PEERS.items() if peer.runtime == "python")
