"""The packed GEMM (y = x w^T + b, the .so's linear layer) of one or more
tgraph builds against ONNX Runtime's MatMul + Add with the same constant
weight, in one process, interleaved: each round runs every engine in turn
(the order rotating), each call once untimed and once timed, so that the
machine's drift and one engine's idle threads hit all alike. ONNX Runtime's
threads do not spin (they would take the cores from the next engine).
Prints each shape's median times, the ratio of ONNX Runtime's to each
build's (above 1: the build is faster) and each result's max error against
float64, relative to max|y|.

    python3 bench/gemm_ort.py ROUNDS THREADS SHIM.so[,LABEL]... -- MxNxK...
"""
import ctypes, sys, time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

I64 = ctypes.c_int64
PF = ctypes.POINTER(ctypes.c_float)


def ptr(a):
    return a.ctypes.data_as(PF)


def build_engine(path, threads, x, w, b):
    lib = ctypes.CDLL(path)
    lib.gemm_threads(threads)
    lib.gemm_packed_size.restype = I64
    (M, K), N = x.shape, w.shape[0]
    wp = np.empty(lib.gemm_packed_size(I64(N), I64(K)), np.float32)
    lib.gemm_pack(ptr(w), I64(N), I64(K), ptr(wp))
    y = np.empty((M, N), np.float32)
    return (lambda: lib.gemm_linear(ptr(x), ptr(wp), ptr(b), ptr(y), I64(M), I64(N), I64(K))), y


def ort_engine(threads, x, w, b):
    (M, K), N = x.shape, w.shape[0]
    g = helper.make_graph(
        [helper.make_node('MatMul', ['x', 'wt'], ['t']), helper.make_node('Add', ['t', 'b'], ['y'])],
        'linear', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [M, K])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, [M, N])],
        [numpy_helper.from_array(np.ascontiguousarray(w.T), 'wt'), numpy_helper.from_array(b, 'b')])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry('session.intra_op.allow_spinning', '0')
    s = ort.InferenceSession(model.SerializeToString(), so, providers=['CPUExecutionProvider'])
    y = np.empty((M, N), np.float32)

    def run():
        y[...] = s.run(None, {'x': x})[0]
    return run, y


def main():
    args = sys.argv[1:]
    sep = args.index('--')
    rounds, threads, shims, shapes = int(args[0]), int(args[1]), args[2:sep], args[sep + 1:]
    rng = np.random.default_rng(1)
    for shape in shapes:
        M, N, K = (int(v) for v in shape.split('x'))
        x = rng.uniform(-1, 1, (M, K)).astype(np.float32)
        w = rng.uniform(-1, 1, (N, K)).astype(np.float32)
        b = rng.uniform(-1, 1, N).astype(np.float32)
        ref = x.astype(np.float64) @ w.T.astype(np.float64) + b
        engines = []
        for s in shims:
            path, _, label = s.partition(',')
            engines.append((label or path,) + build_engine(path, threads, x, w, b))
        engines.append(('onnxruntime',) + ort_engine(threads, x, w, b))
        times = {e[0]: [] for e in engines}
        for r in range(rounds):
            for k in range(len(engines)):
                name, run, _ = engines[(k + r) % len(engines)]
                run()
                t0 = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t0)
        base = np.median(times['onnxruntime'])
        cells = []
        for name, _, y in engines:
            t = np.median(times[name])
            err = np.abs(y - ref).max() / np.abs(ref).max()
            cells.append(f'{name} {t * 1e3:.3f} ms ({base / t:.2f}x, err {err:.0e})')
        print(f'{shape}: ' + '  '.join(cells), flush=True)


main()
