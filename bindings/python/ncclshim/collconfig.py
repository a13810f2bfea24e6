"""NCCL 2.32's per-call options and socket encryption, where the loaded NCCL has them.

    cfg = ncclshim.CollConfig(max_ctas=8, alg_selection="ring", launch_completion_event=ev)
    comm.all_reduce(x, y, stream=s, config=cfg)   # ncclAllReduceConfig (NCCL 2.32.3+)
    ncclshim.set_encryption("psk", psk="...")      # ncclSetEncryption (NCCL 2.32.3+)

A collective given config= calls the ...Config entry point of the loaded NCCL; one that lacks
it raises NcclUnavailable before anything is called, naming the release that brought it.
Without config= nothing changes. Every field is checked against its C type when the
CollConfig is made; the object keeps what its pointers point at alive."""
import ctypes
from typing import Any, Optional

from . import _args, _clib


def _macros():
    return _clib.functions().ENUMS["py_macros"]


def _event_handle(event):
    """A CUDA event handle: an int, torch's Event (.cuda_event), CuPy's (.ptr)."""
    if type(event) is int:
        return _args.integer(event, "launch_completion_event", 0, _args.SIZE_MAX)
    for attr in ("cuda_event", "ptr"):
        handle = getattr(event, attr, None)
        if handle is not None:
            if type(handle) is not int or not 0 <= handle <= _args.SIZE_MAX:
                raise TypeError("launch_completion_event: %s.%s is %r, not an event handle"
                                % (type(event).__name__, attr, handle))
            return handle
    raise TypeError("launch_completion_event must be an int handle, a torch or a CuPy event, "
                    "not %s" % type(event).__name__)


class CollConfig:
    """ncclCollConfig_t: the options of one collective call (NCCL 2.32.3+). A field left None
    is NCCL's default. min_ctas, max_ctas, nvls_ctas, cga_cluster_size, cta_policy: ints in
    [0, 2**31); alg_selection: NCCL's algorithm selection text ("ring", ...);
    force_alg_selection: bool; profiler_tag: an int in [0, 2**64); launch_completion_event:
    a CUDA event (int handle, torch or CuPy event) NCCL records once the kernel is launched."""

    def __init__(self, *, min_ctas: Optional[int] = None, max_ctas: Optional[int] = None,
                 nvls_ctas: Optional[int] = None, cga_cluster_size: Optional[int] = None,
                 alg_selection: Optional[str] = None, force_alg_selection: bool = True,
                 cta_policy: Optional[int] = None, profiler_tag: int = 0,
                 launch_completion_event: Any = None) -> None:
        m = _macros()
        st = _clib.functions().STRUCTS["ncclshim_coll_config_t"]()
        st.size, st.magic = ctypes.sizeof(st), m["PY_NCCL_API_MAGIC"]
        st.version = m["PY_COLL_CONFIG_LAYOUT_VERSION"]
        for field, name, value in (("minCTAs", "min_ctas", min_ctas),
                                   ("maxCTAs", "max_ctas", max_ctas),
                                   ("nvlsCTAs", "nvls_ctas", nvls_ctas),
                                   ("cgaClusterSize", "cga_cluster_size", cga_cluster_size),
                                   ("CTAPolicy", "cta_policy", cta_policy)):
            setattr(st, field, m["PY_NCCL_CONFIG_UNDEF_INT"] if value is None
                    else _args.integer(value, name, 0, _args.INT_MAX))
        if not isinstance(force_alg_selection, bool):
            raise TypeError("force_alg_selection must be a bool, not %s"
                            % type(force_alg_selection).__name__)
        st.forceAlgSelection = int(force_alg_selection)
        self._alg = None if alg_selection is None else \
            _args.text(alg_selection, "alg_selection").encode()
        st.algSelection = self._alg
        st.userProfilerTag = _args.integer(profiler_tag, "profiler_tag", 0, _args.SIZE_MAX)
        st.launchCompletionEvent = None if launch_completion_event is None else \
            _event_handle(launch_completion_event)
        self._event = launch_completion_event  # kept alive with the handle NCCL gets
        self._struct = st

    @property
    def address(self) -> int:
        """The ncclCollConfig_t's address (read-only: NCCL dereferences it)."""
        return ctypes.addressof(self._struct)

    def __repr__(self):
        st = self._struct
        return "CollConfig(min_ctas=%d, max_ctas=%d, alg_selection=%r, tag=%d)" % (
            st.minCTAs, st.maxCTAs, self._alg, st.userProfilerTag)


def set_encryption(mode: str = "psk", psk: Optional[str] = None) -> None:
    """ncclSetEncryption (NCCL 2.32.3+): encryption of NCCL's own sockets, for the
    communicators made afterwards. mode "none" or "psk" (psk: the pre-shared key, a str)."""
    modes = _clib.functions().ENUMS["ncclEncryptionMode_t"]
    code = modes.get("NCCL_ENCRYPTION_MODE_" + mode.upper()) if isinstance(mode, str) else None
    if code is None:
        raise ValueError("mode must be 'none' or 'psk', not %r" % (mode,))
    if (psk is None) != (mode.lower() == "none"):
        raise ValueError("psk is needed with mode 'psk', and only there")
    key = None if psk is None else _args.text(psk, "psk").encode()
    fn = _clib.nccl_function("ncclSetEncryption")  # raises where the NCCL lacks it
    m = _macros()
    cfg = _clib.functions().STRUCTS["ncclshim_encryption_config_t"](
        magic=m["PY_NCCL_API_MAGIC"], version=m["PY_NCCL_HEADER_VERSION"], mode=code, psk=key)
    cfg.size = ctypes.sizeof(cfg)
    r = fn(ctypes.addressof(cfg))
    if r != 0:
        status = _clib.lib().ncclshim_nccl_check(_clib.nccl(), r, b"ncclSetEncryption")
        _clib.check(status, "ncclSetEncryption")
