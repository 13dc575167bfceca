"""`python -m grader COMMAND`: list, doctor, check, profile, batch, merge, bench.

Exit codes of `check`: 0 passed; 1 graded and failed (any defect of the
submission, compile errors included); 2 could not grade (missing file, unknown
exercise, bad flags, no GPU with --backend cuda).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from grader.errors import CannotGrade


def _list(args) -> int:
    from grader.spec.exercises import EXERCISES

    width = max(map(len, EXERCISES))
    for ex in EXERCISES.values():
        launchers = ", ".join(l.name for l in ex.launchers)
        print(f"{ex.name:<{width}}  {ex.summary}  [{launchers}]")
    return 0


def _doctor(args) -> int:
    from grader.course import doctor

    return doctor.main()


def _check(args) -> int:
    from grader.judge import grade, report

    result = grade.grade(
        args.exercise,
        args.file,
        backend=args.backend,
        thresholds_file=args.thresholds,
        timeout=args.timeout,
        seed=args.seed,
        compile_timeout=args.compile_timeout,
        require_gpu=args.require_gpu,
    )
    if args.json:
        print(json.dumps(result.as_dict()))
    else:
        print(report.text(result))
    return result.exit_code


def _profile(args) -> int:
    from grader.judge import profile
    from grader.errors import GraderError

    blocks = "all" if args.all_blocks else "sample"
    try:
        prof = profile.run(
            args.exercise, args.file, args.shape, blocks=blocks, seed=args.seed, resources=not args.no_resources
        )
    except GraderError as e:  # it does not compile, crashes or is wrong: nothing worth counting
        print(f"error: {e}", file=sys.stderr)
        return 1
    except ValueError as e:
        raise CannotGrade(str(e)) from None
    print(profile.to_json(prof) if args.json else profile.text(prof))
    return 0


def _merge(args) -> int:
    from grader.classroom import merge

    return merge.main(args)


def _batch(args) -> int:
    from grader.classroom import batch

    def chart(rows: list[dict], exercise: str, path: str) -> None:  # the course's chart; batch sits below it
        from grader.course import plots

        plots.class_results(rows, exercise).savefig(path, dpi=90)

    return batch.main(args, chart=chart)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m grader", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the exercises").set_defaults(fn=_list)
    sub.add_parser("doctor", help="check this machine's set-up").set_defaults(fn=_doctor)

    _add_check(sub)
    _add_profile(sub)
    _add_batch(sub)
    m = sub.add_parser("merge", help="combine the gradebooks of batch --shard runs into one")
    m.add_argument("out", help="the merged CSV gradebook (a JSON one is written beside it)")
    m.add_argument("parts", nargs="+", help="the shards' CSV gradebooks (their JSON files are read)")
    m.set_defaults(fn=_merge)

    sub.add_parser("bench", help="time the reference kernels against cuBLAS (python -m grader bench --help)")
    return p


def _add_check(sub) -> None:
    c = sub.add_parser("check", help="grade one kernel file")
    c.add_argument("exercise")
    c.add_argument("file", help="a .cu file, or a notebook whose `# kernel: EXERCISE` cell is graded")
    c.add_argument("--backend", choices=("auto", "cuda", "cpu"), default="auto")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument("--thresholds", metavar="FILE.json", help="override speed thresholds")
    c.add_argument("--timeout", type=float, help="seconds the kernel may run (default 60)")
    c.add_argument("--compile-timeout", type=float, help="seconds the compiler may run (default 120)")
    c.add_argument("--seed", type=int, help="fix the input seed (default: secret and fresh)")
    c.add_argument(
        "--require-gpu",
        action="store_true",
        help="accept only a timed GPU verdict (exit 2 without a GPU): no pass on access counts",
    )
    c.set_defaults(fn=_check)


def _add_profile(sub) -> None:
    pr = sub.add_parser("profile", help="count a kernel's memory accesses on the CPU backend, as Nsight Compute would")
    pr.add_argument("exercise")
    pr.add_argument("file", help="a .cu file, or a notebook whose `# kernel: EXERCISE` cell is profiled")
    pr.add_argument(
        "--shape",
        type=int,
        nargs="+",
        metavar="M N K",
        help="the problem size (default: the exercise's profile shape, 256^3 or 1024x1024)",
    )
    pr.add_argument("--json", action="store_true", help="print one JSON object (grader.judge.profile.Profile.as_dict)")
    pr.add_argument("--all-blocks", action="store_true", help="record every block instead of a sample")
    pr.add_argument("--seed", type=int, help="which blocks are sampled, and the inputs (default 0)")
    pr.add_argument("--no-resources", action="store_true", help="skip nvcc -Xptxas -v")
    pr.set_defaults(fn=_profile)


def _add_batch(sub) -> None:
    b = sub.add_parser("batch", help="grade a folder of submissions into a gradebook")
    b.add_argument("exercise")
    b.add_argument("dir")
    b.add_argument("--out", default="grades.csv", help="the CSV gradebook (a JSON one is written beside it)")
    b.add_argument("--jobs", type=int, default=0, help="parallel compiles (and CPU-backend runs); default: CPUs")
    b.add_argument("--backend", choices=("auto", "cuda", "cpu"), default="auto")
    b.add_argument("--thresholds", metavar="FILE.json", help="override speed thresholds")
    b.add_argument("--timeout", type=float, help="seconds each kernel may run (default 60)")
    b.add_argument("--compile-timeout", type=float, help="seconds the compiler may run (default 120)")
    b.add_argument("--gpus", type=int, help="GPUs to use, one submission at a time each (default: all)")
    b.add_argument("--plot", metavar="FILE.png", help="also save a chart of the outcomes and speed-ups")
    b.add_argument(
        "--per-gpu",
        type=int,
        default=2,
        metavar="K",
        help="submissions started at once per GPU; they queue for the GPU itself, so starts "
        "and checks overlap while kernels and timings never share it (default 2)",
    )
    b.add_argument("--regrade", action="store_true", help="ignore the existing gradebook: grade everything")
    b.add_argument(
        "--require-gpu",
        action="store_true",
        help="accept only timed GPU verdicts (exit 2 without a GPU): no pass on access counts",
    )
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.add_argument(
        "--shard",
        metavar="I/N",
        help="grade only share I of N (0-based; a Slurm array task: "
        "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT); see merge",
    )
    b.add_argument(
        "--format",
        choices=("csv", "gradescope"),
        default="csv",
        help="gradescope: --out is Gradescope's results.json (the gradebook is written beside it)",
    )
    b.set_defaults(fn=_batch)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:  # bench parses its own options (--json, --sizes ...)
        from grader.course import bench

        return bench.main(argv[1:])
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except CannotGrade as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `... | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
