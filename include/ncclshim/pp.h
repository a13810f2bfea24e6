/* Preprocessor helpers for the X-macro symbol lists (see nccl_functions.h).
 *
 * A parameter list is written as a count and a tuple of (type, name) pairs:
 *   3, ((ncclComm_t, comm), (void *, buff), (size_t, size))
 * and these macros turn it into a declaration list, an argument list, or one
 * statement per parameter. Written by hand, for up to 11 parameters (the most any listed
 * function has): a longer row needs one more rung on each of the three ladders below
 * (PARAMS_n, LIST_n, EACH_n). */
#ifndef NCCLSHIM_PP_H
#define NCCLSHIM_PP_H

/* clang-format off */
#define NCCLSHIM_PP_STRIP(...) __VA_ARGS__
#define NCCLSHIM_PP_APPLY(macro, args) macro args
#define NCCLSHIM_PP_NAME(type, name) name
#define NCCLSHIM_PP_DECL(type, name) type name

/* (t0 n0, t1 n1, ...) or (void) */
#define NCCLSHIM_PP_PARAMS(n, params) NCCLSHIM_PP_PARAMS_##n(params)
/* (n0, n1, ...) */
#define NCCLSHIM_PP_ARGS(n, params) (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_##n, (NCCLSHIM_PP_NAME, NCCLSHIM_PP_STRIP params)))
/* M(t0, n0) M(t1, n1) ... : one expansion per parameter, nothing between */
#define NCCLSHIM_PP_EACH(n, M, params) NCCLSHIM_PP_APPLY(NCCLSHIM_PP_EACH_##n, (M, NCCLSHIM_PP_STRIP params))

#define NCCLSHIM_PP_PARAMS_0(params) (void)
#define NCCLSHIM_PP_PARAMS_1(params) (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_1, (NCCLSHIM_PP_DECL, NCCLSHIM_PP_STRIP params)))
#define NCCLSHIM_PP_PARAMS_2(params) (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_2, (NCCLSHIM_PP_DECL, NCCLSHIM_PP_STRIP params)))
#define NCCLSHIM_PP_PARAMS_3(params) (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_3, (NCCLSHIM_PP_DECL, NCCLSHIM_PP_STRIP params)))
#define NCCLSHIM_PP_PARAMS_4(params) (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_4, (NCCLSHIM_PP_DECL, NCCLSHIM_PP_STRIP params)))
#define NCCLSHIM_PP_PARAMS_5(params) (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_5, (NCCLSHIM_PP_DECL, NCCLSHIM_PP_STRIP params)))
#define NCCLSHIM_PP_PARAMS_6(params) (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_6, (NCCLSHIM_PP_DECL, NCCLSHIM_PP_STRIP params)))
#define NCCLSHIM_PP_PARAMS_7(params) (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_7, (NCCLSHIM_PP_DECL, NCCLSHIM_PP_STRIP params)))
#define NCCLSHIM_PP_PARAMS_8(params) (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_8, (NCCLSHIM_PP_DECL, NCCLSHIM_PP_STRIP params)))
#define NCCLSHIM_PP_PARAMS_9(params) (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_9, (NCCLSHIM_PP_DECL, NCCLSHIM_PP_STRIP params)))
#define NCCLSHIM_PP_PARAMS_10(params) (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_10, (NCCLSHIM_PP_DECL, NCCLSHIM_PP_STRIP params)))
#define NCCLSHIM_PP_PARAMS_11(params) (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_11, (NCCLSHIM_PP_DECL, NCCLSHIM_PP_STRIP params)))
#define NCCLSHIM_PP_LIST_0(M, ...) 
#define NCCLSHIM_PP_LIST_1(M, p0) M p0
#define NCCLSHIM_PP_LIST_2(M, p0, p1) M p0, M p1
#define NCCLSHIM_PP_LIST_3(M, p0, p1, p2) M p0, M p1, M p2
#define NCCLSHIM_PP_LIST_4(M, p0, p1, p2, p3) M p0, M p1, M p2, M p3
#define NCCLSHIM_PP_LIST_5(M, p0, p1, p2, p3, p4) M p0, M p1, M p2, M p3, M p4
#define NCCLSHIM_PP_LIST_6(M, p0, p1, p2, p3, p4, p5) M p0, M p1, M p2, M p3, M p4, M p5
#define NCCLSHIM_PP_LIST_7(M, p0, p1, p2, p3, p4, p5, p6) M p0, M p1, M p2, M p3, M p4, M p5, M p6
#define NCCLSHIM_PP_LIST_8(M, p0, p1, p2, p3, p4, p5, p6, p7) M p0, M p1, M p2, M p3, M p4, M p5, M p6, M p7
#define NCCLSHIM_PP_LIST_9(M, p0, p1, p2, p3, p4, p5, p6, p7, p8) M p0, M p1, M p2, M p3, M p4, M p5, M p6, M p7, M p8
#define NCCLSHIM_PP_LIST_10(M, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9) M p0, M p1, M p2, M p3, M p4, M p5, M p6, M p7, M p8, M p9
#define NCCLSHIM_PP_LIST_11(M, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10) M p0, M p1, M p2, M p3, M p4, M p5, M p6, M p7, M p8, M p9, M p10
#define NCCLSHIM_PP_EACH_0(M, ...) 
#define NCCLSHIM_PP_EACH_1(M, p0) M p0
#define NCCLSHIM_PP_EACH_2(M, p0, p1) M p0 M p1
#define NCCLSHIM_PP_EACH_3(M, p0, p1, p2) M p0 M p1 M p2
#define NCCLSHIM_PP_EACH_4(M, p0, p1, p2, p3) M p0 M p1 M p2 M p3
#define NCCLSHIM_PP_EACH_5(M, p0, p1, p2, p3, p4) M p0 M p1 M p2 M p3 M p4
#define NCCLSHIM_PP_EACH_6(M, p0, p1, p2, p3, p4, p5) M p0 M p1 M p2 M p3 M p4 M p5
#define NCCLSHIM_PP_EACH_7(M, p0, p1, p2, p3, p4, p5, p6) M p0 M p1 M p2 M p3 M p4 M p5 M p6
#define NCCLSHIM_PP_EACH_8(M, p0, p1, p2, p3, p4, p5, p6, p7) M p0 M p1 M p2 M p3 M p4 M p5 M p6 M p7
#define NCCLSHIM_PP_EACH_9(M, p0, p1, p2, p3, p4, p5, p6, p7, p8) M p0 M p1 M p2 M p3 M p4 M p5 M p6 M p7 M p8
#define NCCLSHIM_PP_EACH_10(M, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9) M p0 M p1 M p2 M p3 M p4 M p5 M p6 M p7 M p8 M p9
#define NCCLSHIM_PP_EACH_11(M, p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10) M p0 M p1 M p2 M p3 M p4 M p5 M p6 M p7 M p8 M p9 M p10

/* Choosing by token at preprocessing time: NCCLSHIM_PP_SELECT(PREFIX_##token, fallback) is
 * what follows "~," in the definition of PREFIX_token when that macro exists, else fallback:
 *   #define KIND_VOID ~, nothing
 *   NCCLSHIM_PP_SELECT(KIND_##returns, value)   -> "nothing" for VOID, "value" for the rest */
#define NCCLSHIM_PP_SELECT_SECOND(a, b, ...) b
#define NCCLSHIM_PP_SELECT_(...) NCCLSHIM_PP_SELECT_SECOND(__VA_ARGS__)
#define NCCLSHIM_PP_SELECT(probe, fallback) NCCLSHIM_PP_SELECT_(probe, fallback, ~)
#define NCCLSHIM_PP_CAT_(a, b) a##b
#define NCCLSHIM_PP_CAT(a, b) NCCLSHIM_PP_CAT_(a, b)

/* clang-format on */

#endif /* NCCLSHIM_PP_H */
