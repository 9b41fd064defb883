#!/usr/bin/env python3
"""The model zoo: real architectures through every tgraph step, against eager PyTorch.

    python3 bench/zoo/zoo.py [--tools DIR] [--work DIR] [--timeout S]
                             [--export-only | --reuse-exports] [--build COMMIT]
                             [--tcompile-args ARGS] [MODEL...]

For each model of models.ZOO (or the ones named; a name ending in * is a
prefix), in a fresh Python process with a time limit: build it with seeded
random weights, make its weights non-trivial (parameters that init left
constant, such as zero biases, unit norms and 1e-6 layer scales, drawn at
random; BatchNorm statistics measured on a random batch), run it eagerly at
batch 1 and 3, and export it three ways: torch.export with a dynamic batch
(M.pt2), the same after run_decompositions() (M.core.pt2; torch's table
with its CPU attention decomposition corrected, see core_decompositions), and
torch.onnx.export(dynamo=True) (M.onnx; where that fails, of the M.core.pt2 program,
noted in the table). Then, each under its own time
limit: texport, trun at batch 1 and 3, tcompile, and the .so at batch 1
and 3, every run checked against eager: max abs error, and max abs error /
max|ref| <= 1e-4 to pass. Each model's results are kept in
WORK/M/result.json; bench/zoo/RESULTS.md is written from all of them, so a
run over some models (or formats) updates their rows only; each row names the
build that ran it (--build). --export-only stops after the
exports; --reuse-exports then reruns only the tgraph steps on them (after a
change to tgraph, the exports, most of a run's time, need not be redone).
--tcompile-args passes options to tcompile (--tcompile-args=--layout=nhwc).

An output is flagged "trivial" when its magnitude is below 1e-2 or it
barely depends on the input (two inputs' outputs closer than 1e-3 of it):
any tolerance would pass such a model.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FORMATS = ["pt2", "core.pt2", "onnx"]
STEPS = ["import", "trun b1", "trun b3", "tcompile", ".so b1", ".so b3"]
RTOL = 1e-4


# ---- the export worker (runs in its own process) ----

def nontrivial_weights(model, example):
    import torch
    g = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point() and p.numel() > 1 and bool((p == p.flatten()[0]).all()):
                c = float(p.flatten()[0])
                lo, hi = (0.5, 1.5) if c != 0 else (-0.2, 0.2)
                p.copy_(torch.rand(p.shape, generator=g) * (hi - lo) + lo)
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if bns:     # running statistics of a random batch: non-trivial, and sane
        for m in bns:
            m.reset_running_stats()
            m.momentum = None
        model.train()
        with torch.no_grad():
            model(*example)
    model.eval()


def exception_summary(e):
    """One line for an exception: torch.onnx's errors are pages, with colour codes, whose
    cause comes after 'Exception summary'."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", f"{type(e).__name__}: {e}")
    tail = text.split("## Exception summary", 1)
    lines = [ln.strip() for ln in tail[-1].splitlines() if ln.strip()]
    return (lines[0] if lines else text)[:300]


def save_npy(path, t):
    import numpy as np
    np.save(path, t.detach().numpy())


def core_decompositions():
    """torch's default decomposition table with one entry corrected: its
    decomposition of _scaled_dot_product_flash_attention_for_cpu returns the
    output laid out [L, N, H, E] (the layout nn.MultiheadAttention wants, see
    the comment above it in torch/_decomp/decompositions.py), while the CPU
    kernel it stands for, and so the export's own trace, lays it out
    [N, L, H, E]. A model that views the output where the kernel's layout
    allows it and that one does not (GPT-2's Conv1D: attn_output.transpose(1,
    2).reshape(...).view(-1, E)) fails in run_decompositions with "Cannot view
    a tensor with shape ...". The same decomposition, its output copied into
    the kernel's layout; values unchanged."""
    import torch
    from torch._decomp import decompositions as D
    aten = torch.ops.aten

    def flash_cpu(*args, **kwargs):
        out, lse = D.scaled_dot_product_flash_attention_for_cpu(*args, **kwargs)
        return out.transpose(1, 2).contiguous().transpose(1, 2), lse

    table = torch.export.default_decompositions()
    table[aten._scaled_dot_product_flash_attention_for_cpu.default] = flash_cpu
    return table


def export_worker(name, work, formats):
    import numpy as np
    import torch
    import torch.utils._pytree as pytree
    sys.path.insert(0, HERE)
    from models import ZOO
    torch.manual_seed(0)
    model, make_inputs, dyn = ZOO[name][1]()
    nontrivial_weights(model, make_inputs(4, 99))
    info = {"params": sum(p.numel() for p in model.parameters())}
    outs = {}
    with torch.no_grad():
        for b in (1, 3):
            args = make_inputs(b, b)
            for k, a in enumerate(args):
                save_npy(os.path.join(work, f"in{k}.b{b}.npy"), a)
            outs[b] = pytree.tree_leaves(model(*args))
            for k, o in enumerate(outs[b]):
                save_npy(os.path.join(work, f"out{k}.b{b}.npy"), o)
        other = pytree.tree_leaves(model(*make_inputs(1, 7)))
    info["outputs"] = len(outs[1])
    mag = min(float(o.abs().max()) for o in outs[1])
    dep = min(float((o - p).abs().max()) / max(float(o.abs().max()), 1e-30)
              for o, p in zip(outs[1], other))
    info["max_out"] = mag
    info["trivial"] = mag < 1e-2 or dep < 1e-3
    args = make_inputs(3, 3)
    info["export"] = {}
    core = None
    try:
        prog = torch.export.export(model, args, dynamic_shapes=dyn)
        torch.export.save(prog, os.path.join(work, "m.pt2"))
        info["export"]["pt2"] = "ok"
        try:
            core = prog.run_decompositions(core_decompositions())
            torch.export.save(core, os.path.join(work, "m.core.pt2"))
            info["export"]["core.pt2"] = "ok"
        except Exception as e:          # noqa: BLE001 - reported in the table
            info["export"]["core.pt2"] = exception_summary(e)
    except Exception as e:              # noqa: BLE001
        info["export"]["pt2"] = info["export"]["core.pt2"] = exception_summary(e)
    if "onnx" in formats:
        onnx_path = os.path.join(work, "m.onnx")
        try:
            torch.onnx.export(model, args, onnx_path, dynamo=True,
                              dynamic_shapes=dyn, external_data=False)
            info["export"]["onnx"] = "ok"
        except Exception as e:          # noqa: BLE001
            info["export"]["onnx"] = exception_summary(e)
            # torch.onnx.export decomposes with torch's own table, whose CPU attention
            # decomposition breaks some models (core_decompositions says why, T5 among
            # them): the core.pt2 program, already decomposed by the corrected table.
            if core is not None:
                try:
                    torch.onnx.export(core, (), onnx_path, dynamo=True, external_data=False)
                    info["export"]["onnx"] = "ok"
                    info["onnx_note"] = ("exported from the core.pt2 program (the module's "
                                         "export failed: " + exception_summary(e) + ")")
                except Exception:       # noqa: BLE001 - the first failure is reported
                    pass
    with open(os.path.join(work, "export.json"), "w") as f:
        json.dump(info, f)


# ---- the steps ----

def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", f"over {timeout} s", ""
    return ("ok" if p.returncode == 0 else "error"), p.stderr, p.stdout


def compare(got, ref):
    """max abs error, max abs error / max|ref|, and whether it passes."""
    import numpy as np
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return None, None, f"got {got.dtype}{list(got.shape)}, expected {ref.dtype}{list(ref.shape)}"
    g, r = got.astype(np.float64), ref.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(r)):
        return None, None, "NaN where the reference has none (or the reverse)"
    fin = ~np.isnan(r)
    err = float(np.abs(g[fin] - r[fin]).max()) if fin.any() else 0.0
    rel = err / max(float(np.abs(r[fin]).max()) if fin.any() else 0.0, 1e-30)
    return err, rel, None if rel <= RTOL else f"max rel error {rel:.3g} > {RTOL:g}"


def check_run(tools, model, work, b, outputs, timeout):
    """Run model (a .tg or .so) at batch b; the outputs against eager's."""
    import numpy as np
    ins = sorted(f for f in os.listdir(work) if f.startswith("in") and f.endswith(f".b{b}.npy"))
    got = os.path.join(work, "got")
    if os.path.isdir(got):
        for f in os.listdir(got):
            os.remove(os.path.join(got, f))
    os.makedirs(got, exist_ok=True)
    dest = got if outputs > 1 else os.path.join(got, "out0.npy")
    st, err, _ = run([os.path.join(tools, "trun"), model, "-o", dest] +
                     [os.path.join(work, f) for f in ins], timeout)
    if st != "ok":
        return st, err, []
    errs, why = [], []
    for k in range(outputs):
        e, r, bad = compare(np.load(os.path.join(got, f"out{k}.npy")),
                            np.load(os.path.join(work, f"out{k}.b{b}.npy")))
        if e is not None:
            errs.append((e, r))
        if bad:
            why.append(f"output {k}: {bad}")
    return ("FAIL", "\n".join(why), errs) if why else ("ok", "", errs)


def first_lines(text, n=12):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[:n])


def run_format(tools, work, fmt, outputs, timeout, copts=()):
    res = {"steps": {}, "errors": [], "messages": {}}
    src = os.path.join(work, f"m.{fmt}")
    tg, so = src + ".tg", src + ".so"

    def step(name, st, msg=""):
        res["steps"][name] = st
        if st != "ok" and msg:
            res["messages"][name] = first_lines(msg)
        return st == "ok"

    st, err, _ = run([os.path.join(tools, "texport"), src, "-o", tg], timeout)
    if step("import", st, err):
        for b in (1, 3):
            st, err, e = check_run(tools, tg, work, b, outputs, timeout)
            res["errors"] += e
            step(f"trun b{b}", st, err)
        st, err, _ = run([os.path.join(tools, "tcompile"), *copts, tg, "-o", so], 2 * timeout)
        if step("tcompile", st, err):
            for b in (1, 3):
                st, err, e = check_run(tools, so, work, b, outputs, timeout)
                res["errors"] += e
                step(f".so b{b}", st, err)
    for f in (tg, so):
        if os.path.exists(f):
            os.remove(f)
    return res


def export_model(name, work, args):
    """Exports NAME into WORK; returns (export seconds, error text)."""
    shutil.rmtree(work, ignore_errors=True)     # a model's earlier run, outputs folder and all
    os.makedirs(work)
    t0 = time.time()
    st, err, _ = run([sys.executable, os.path.abspath(__file__), "--export-worker", name, work,
                      ",".join(args.formats)], args.export_timeout)
    return round(time.time() - t0, 1), first_lines(err, 4) if st != "timeout" else "export: timeout"


def reusable_export(work, formats):
    """An earlier export of every format asked for, kept by --export-only or a past run."""
    try:
        with open(os.path.join(work, "export.json")) as f:
            return set(formats) <= set(json.load(f)["export"])
    except (OSError, ValueError, KeyError):
        return False


def earlier_formats(work, args):
    """The formats of WORK's earlier result not run now (with the build that ran them), so a
    run over some formats updates their rows only."""
    try:
        with open(os.path.join(work, "result.json")) as f:
            earlier = json.load(f)["formats"]
    except (OSError, ValueError, KeyError):
        return {}
    return {f: r for f, r in earlier.items() if f not in args.formats}


def source_head():
    """This source tree's HEAD ('+' when it has uncommitted changes), or '?': the default
    --build."""
    src = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", src, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return head + ("+" if dirty else "")


def run_model(name, args):
    work = os.path.join(args.work, name.replace("+", "_"))
    if args.reuse_exports and reusable_export(work, args.formats):
        export_s, err = None, ""
    else:
        export_s, err = export_model(name, work, args)
    result = {"name": name, "export_s": export_s, "formats": earlier_formats(work, args)}
    info_path = os.path.join(work, "export.json")
    if not os.path.exists(info_path):
        result["export_error"] = err
    elif args.export_only:
        pass
    else:
        with open(info_path) as f:
            info = json.load(f)
        result.update({k: info[k] for k in ("params", "max_out", "trivial", "onnx_note")
                       if k in info})
        for fmt in args.formats:
            if info["export"][fmt] != "ok":
                result["formats"][fmt] = {"export_error": info["export"][fmt][:300]}
                continue
            result["formats"][fmt] = run_format(args.tools, work, fmt, info["outputs"],
                                                args.timeout, args.tcompile_args.split())
            result["formats"][fmt]["build"] = args.build
    with open(os.path.join(work, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"{name}: {summary_line(result)}", flush=True)


def end_to_end(fr):
    return fr and all(fr.get("steps", {}).get(s) == "ok" for s in STEPS)


def summary_line(r):
    if "export_error" in r:
        return "export failed"
    if not r["formats"]:
        return "exported"
    return " ".join(f"{fmt}={'ok' if end_to_end(r['formats'][fmt]) else 'no'}"
                    for fmt in r["formats"])


# ---- the table ----

UNSUPPORTED = re.compile(r"node \S+ \((torch\.ops\.)?([\w.]+)\): (.*)")
ONNX_UNSUPPORTED = re.compile(r":\s+(\S+) \((domain [\w.]*, opset \d+)\) at node")


def builds_line(results):
    """Which build ran how many rows (the build column; '?': a run before builds were
    recorded)."""
    count = {}
    for r in results:
        for fr in r.get("formats", {}).values():
            if "steps" in fr:
                count[fr.get("build", "?")] = count.get(fr.get("build", "?"), 0) + 1
    return ", ".join(f"{b} ({n} rows)" for b, n in sorted(count.items(), key=lambda kv: -kv[1]))


def write_results(args, results):
    from models import ZOO
    order = list(ZOO)
    results.sort(key=lambda r: order.index(r["name"]) if r["name"] in order else len(order))
    n = len(results)
    both = [r["name"] for r in results
            if all(end_to_end(r["formats"].get(f)) for f in ("pt2", "core.pt2"))]
    per = {f: sum(bool(end_to_end(r["formats"].get(f))) for r in results) for f in FORMATS}
    tried = {f: sum(f in r["formats"] or "export_error" in r for r in results) for f in FORMATS}
    worst = {f: max([x for r in results if end_to_end(r["formats"].get(f))
                      for _, x in r["formats"][f].get("errors", [])] or [0]) for f in FORMATS}
    lines = ["# Model zoo: real architectures through texport, trun and tcompile", "",
             "Written by `make zoo` (bench/zoo/zoo.py; models in bench/zoo/models.py): seeded",
             "random weights (constant-initialized parameters redrawn, BatchNorm statistics",
             "measured on a random batch), exported by torch.export with a dynamic batch",
             "(`pt2`), the same after `run_decompositions()` (`core.pt2`; torch's table",
             "with its CPU attention decomposition corrected: `core_decompositions` in zoo.py",
             "says why) and",
             "`torch.onnx.export(dynamo=True)` (`onnx`). Every run is checked against eager",
             "PyTorch float32 at batch 1 and 3: max abs error, and max rel error = max abs",
             f"error / max|ref| (pass: rel <= {RTOL:g}). `FAIL`: ran, over tolerance; `error`:",
             "the step failed (see Failures); `-`: not reached. `trivial`: the output is",
             "tiny or hardly depends on the input, so its errors prove little.",
             "",
             f"torch {args.torch_version}; {time.strftime('%Y-%m-%d')}; "
             f"tools built from {builds_line(results)}.",
             "",
             f"**End to end (import, trun b1/b3, tcompile, .so b1/b3 all ok): "
             f"pt2 {per['pt2']}/{tried['pt2']}, core.pt2 {per['core.pt2']}/{tried['core.pt2']}, "
             f"onnx {per['onnx']}/{tried['onnx']}; "
             f"both .pt2 IR levels: {len(both)}/{n}. Worst max rel error of those end to end: "
             + ", ".join(f"{f} {worst[f]:.2g}" for f in FORMATS) + ".**", "",
             "| model | params | max\\|out\\| | format | " + " | ".join(STEPS) +
             " | max abs err | max rel err | build |",
             "|---|---:|---:|---|" + "---|" * len(STEPS) + "---:|---:|---|"]
    failures, missing, notes = [], {}, []
    for r in results:
        name = r["name"]
        if "export_error" in r:
            lines.append(f"| {name} | | | (export) | " + " | ".join("-" for _ in STEPS) + " | | | |")
            failures.append(f"- **{name}** export: {r['export_error']}")
            continue
        if "max_out" not in r:      # exported by --export-only, never run
            lines.append(f"| {name} | | | (exported, not run) | " +
                         " | ".join("-" for _ in STEPS) + " | | | |")
            continue
        mag = f"{r['max_out']:.3g}" + (" trivial" if r.get("trivial") else "")
        for fmt in FORMATS:
            fr = r["formats"].get(fmt)
            if fr is None:
                continue
            build = fr.get("build", "?") if "steps" in fr else ""
            if fmt == "onnx" and r.get("onnx_note"):
                notes.append(f"- **{name}** onnx: {r['onnx_note']}")
            if "export_error" in fr:
                cells = ["export failed"] + ["-"] * (len(STEPS) - 1)
                failures.append(f"- **{name}** {fmt} export: " +
                                fr["export_error"].replace("\n", " ")[:300])
                err = ["", ""]
            else:
                cells = [fr["steps"].get(s, "-") for s in STEPS]
                e = fr.get("errors", [])
                err = [f"{max(a for a, _ in e):.2g}", f"{max(x for _, x in e):.2g}"] if e else ["", ""]
                for s, msg in fr.get("messages", {}).items():
                    failures.append(f"- **{name}** {fmt} {s}: " +
                                    msg.replace("\n", "<br>").replace("|", "\\|")[:1500])
                    for m in UNSUPPORTED.finditer(msg):
                        missing.setdefault((m.group(2), m.group(3)[:80]), set()).add(name)
                    for m in ONNX_UNSUPPORTED.finditer(msg):
                        missing.setdefault((f"ONNX {m.group(1)}", f"unsupported ({m.group(2)})"),
                                           set()).add(name)
            lines.append(f"| {name} | {r['params'] / 1e6:.2f}M | {mag} | {fmt} | " +
                         " | ".join(cells) + f" | {err[0]} | {err[1]} | {build} |")
    if missing:
        lines += ["", "## Operators texport could not convert", "",
                  "| operator | reason | models |", "|---|---|---|"]
        for (op, why), ms in sorted(missing.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"| {op} | {why} | {', '.join(sorted(ms))} |")
    if notes:
        lines += ["", "## Notes", ""] + notes
    if failures:
        lines += ["", "## Failures", ""] + failures
    with open(os.path.join(HERE, "RESULTS.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--export-worker":
        return export_worker(sys.argv[2], sys.argv[3], sys.argv[4].split(","))
    sys.path.insert(0, HERE)
    from models import ZOO
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", default=os.path.join(HERE, "..", "..", "tools"))
    ap.add_argument("--work", default="zoo-work")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per tool step")
    ap.add_argument("--export-timeout", type=int, default=900)
    ap.add_argument("--formats", default=",".join(FORMATS),
                    help="comma list of pt2, core.pt2, onnx (default all)")
    ap.add_argument("--table-only", action="store_true", help="rewrite RESULTS.md only")
    ap.add_argument("--export-only", action="store_true",
                    help="export the models into WORK and stop (for a later --reuse-exports)")
    ap.add_argument("--reuse-exports", action="store_true",
                    help="keep a model's exports already in WORK: rerun the tgraph steps only")
    ap.add_argument("--build", help="the commit the tools were built from, shown per row "
                    "(default: this tree's HEAD)")
    ap.add_argument("--tcompile-args", default="",
                    help="options for tcompile, split at spaces (--tcompile-args=--layout=nhwc)")
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    args.formats = args.formats.split(",")
    if not set(args.formats) <= set(FORMATS):
        sys.exit(f"zoo: --formats takes {', '.join(FORMATS)}")
    import torch
    args.torch_version = torch.__version__
    args.build = args.build or source_head()
    names = []
    for m in args.models or list(ZOO):
        sel = [n for n in ZOO if n.startswith(m[:-1])] if m.endswith("*") else [m]
        for n in sel:
            if n not in ZOO:
                sys.exit(f"zoo: unknown model '{n}' (known: {', '.join(ZOO)})")
            names.append(n)
    if not args.table_only:
        for n in names:
            run_model(n, args)
    if args.export_only:
        return
    results = []
    if os.path.isdir(args.work):
        for d in sorted(os.listdir(args.work)):
            p = os.path.join(args.work, d, "result.json")
            if os.path.exists(p):
                with open(p) as f:
                    results.append(json.load(f))
    write_results(args, results)


if __name__ == "__main__":
    main()
