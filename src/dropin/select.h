/* Choosing by token at preprocessing time, for code generated from the function list.
 * NCCLSHIM_SELECT(PREFIX_##token, fallback) is what follows "~," in the definition of
 * PREFIX_token when that macro exists, and `fallback` when it does not:
 *   #define KIND_VOID ~, nothing_to_return
 *   NCCLSHIM_SELECT(KIND_##returns, return)   -> "return" for every kind but VOID */
#ifndef NCCLSHIM_DROPIN_SELECT_H
#define NCCLSHIM_DROPIN_SELECT_H

#define NCCLSHIM_SELECT_SECOND(a, b, ...) b
#define NCCLSHIM_SELECT_(...) NCCLSHIM_SELECT_SECOND(__VA_ARGS__)
#define NCCLSHIM_SELECT(probe, fallback) NCCLSHIM_SELECT_(probe, fallback, ~)
#define NCCLSHIM_CAT_(a, b) a##b
#define NCCLSHIM_CAT(a, b) NCCLSHIM_CAT_(a, b)

/* `return` before a call whose value is returned: every return kind but VOID. */
#define NCCLSHIM_RETURN_KIND_VOID ~,
#define NCCLSHIM_RETURN_IF_VALUE(returns) NCCLSHIM_SELECT(NCCLSHIM_RETURN_KIND_##returns, return )

#endif
