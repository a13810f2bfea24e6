"""The exceptions of ncclshim's communicator layer.

Every failure of a checked call raises NcclshimError (or a subclass) carrying:
    status       ncclshim's status code (int; NCCLSHIM_OK is 0) and status_name ("NCCL_ERROR")
    nccl_result  NCCL's ncclResult_t when NCCL answered one (else None), nccl_name
                 ("ncclInvalidArgument") and nccl_text (NCCL's own text for the code)
    last_error   NCCL's ncclGetLastError() at the time ("" when none or not available)
    call         the call that failed ("ncclAllReduce", "ncclshim_comm_wait")
    message      ncclshim's message (ncclshim_last_error()), which str() shows
"""


class NcclshimError(RuntimeError):
    """A checked call failed."""

    def __init__(self, message, call=None, status=None, status_name=None, nccl_result=None,
                 nccl_name=None, nccl_text=None, last_error=""):
        super().__init__(message)
        self.message = message
        self.call = call
        self.status = status
        self.status_name = status_name
        self.nccl_result = nccl_result
        self.nccl_name = nccl_name
        self.nccl_text = nccl_text
        self.last_error = last_error


class NcclUnavailable(NcclshimError):
    """The loaded NCCL lacks the function or feature (or no NCCL is loaded)."""


class NcclTimeout(NcclshimError):
    """A bounded wait ran out (status TIMEOUT)."""
