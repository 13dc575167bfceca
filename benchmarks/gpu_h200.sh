#!/bin/bash
# One device call: tune 05, run the full bench, count bank conflicts with ncu.
# Usage (on the GPU machine, repo root): bash benchmarks/gpu_h200.sh [tune|bench|ncu|fused|batch|flushcmp|test|
#   gputests|gputests2|suites|tests|nbexec|nbval|training|relugap|latency|calibrate|tune4|tune5|breakdown|ncuepi|gap5]...
# Carried with the tree (both ignored by git): .whl/ (../shared/gpu/jupyter-wheels.sh: Jupyter, nbval) and
# .gpu-carry/bubblewrap_*.deb (`apt-get download bubblewrap`): the machine has neither and installs nothing.
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:$PYTHONPATH GRADER_CACHE=/tmp/gcache
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
if [ -d .whl ] && [ ! -d /tmp/site ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
fi
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site:$PYTHONPATH PATH=/tmp/site/bin:$PATH
if ! command -v bwrap >/dev/null && ls .gpu-carry/bubblewrap_*.deb >/dev/null 2>&1; then
  dpkg -x .gpu-carry/bubblewrap_*.deb /tmp/pkg && export PATH=/tmp/pkg/usr/bin:$PATH
fi
steps=${@:-tune bench ncu}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv > $OUT/smi.txt 2>&1
[ -z "${NO_DMON:-}" ] && (nvidia-smi dmon -s pc -d 2 > $OUT/dmon.txt 2>&1 &)  # NO_DMON=1: one file fewer in $OUT
for s in $steps; do
  case $s in
    tune)  timeout 230 python3 benchmarks/gpu_tune.py relu gemm 2>&1 | tee $OUT/tune.log ;;
    bench) timeout ${BENCH_TIMEOUT:-300} python3 -m grader.course.bench --save $OUT/h200.json --plot $OUT/ladder.png 2>&1 | tee $OUT/bench.log ;;
    fused) TUNE_SECONDS=${TUNE_SECONDS:-4} timeout 200 python3 benchmarks/gpu_tune.py fused 2>&1 | tee $OUT/fused.log ;;
    batch) timeout 450 python3 benchmarks/batch_class.py 50 --jobs 16 --per-gpu ${PER_GPU:-2} 2>$OUT/batch.err | tee $OUT/batch.log ;;
    flushcmp)  # is the write-flush hurting small sizes? the same bench with each flush, warm-up 200 ms
           for f in write read; do timeout 120 python3 -m grader.course.bench --only gemm --sizes 1024 2048 4096 --shapes \
             --flush $f --warmup-ms 200 --save $OUT/flush_$f.json 2>/dev/null | grep -E "cublas|warptile|naive " | tee -a $OUT/flushcmp.log; done ;;
    ncuepi)  # kernels/07's epilogue under ncu (benchmarks/gpu_ncu_epilogue.py) -> $OUT/ncu_epilogue.txt
           timeout 300 ncu --clock-control none --set full -k regex:"gemm|bias_relu" -o /tmp/epi python3 benchmarks/gpu_ncu_epilogue.py \
             > $OUT/ncu_epilogue.log 2>&1; ncu --import /tmp/epi.ncu-rep --page details > $OUT/ncu_epilogue.txt 2>&1
           grep -E "^  [a-z]|Duration|Executed Ipc|Issue Slots|DRAM Throughput" $OUT/ncu_epilogue.txt | head -60 ;;
    tune5) TUNE_SECONDS=${TUNE_SECONDS:-4} timeout 300 python3 benchmarks/gpu_tune.py gemm5 2>&1 | tee $OUT/tune5.log ;;
    tune4) TUNE_SECONDS=${TUNE_SECONDS:-4} timeout 200 python3 benchmarks/gpu_tune.py gemm4 2>&1 | tee $OUT/tune4.log ;;
    breakdown) for e in ${BREAKDOWN:-register_blocked relu_mask}; do timeout 90 python3 benchmarks/worker_breakdown.py $e 2>&1 | tee -a $OUT/breakdown.log | grep -E "PASSED|FAILED|arrivals|timed:|worker "; done ;;
    tune2) TUNE_SECONDS=3 timeout 80 python3 benchmarks/gpu_tune.py gemm2 2>&1 | tee $OUT/tune2.log ;;
    pick)  # make the picked variant's -D values the defaults of 05 and 07 (same edit applied in the repo)
           for f in $(cat $OUT/pick.txt); do n=${f#-D}; sed -i "s/^#define ${n%%=*} .*/#define ${n%%=*} ${n#*=}/" kernels/05_warptile_pipelined.cu kernels/07_gemm_relu.cu; done
           grep -h "^#define \(BIG_\|FRAG\|GROUP\)" kernels/05_warptile_pipelined.cu | tee $OUT/defaults.txt ;;
    test)  timeout 200 python3 -m pytest -q -x tests/test_kernels.py -m gpu -p no:cacheprovider 2>&1 | tail -5 | tee $OUT/test.log ;;
    gputests)  # every test marked gpu (229 s on the H100 in one process)
           timeout ${GPU_TESTS_TIMEOUT:-300} python3 -m pytest -q -ra -m gpu tests/ -p no:cacheprovider 2>&1 | tee $OUT/gputests.log | tail -15 ;;
    gputests2)  # the same tests in two processes, for a short device budget: the files that time kernels in
                # one, those that build and check in the other (own caches: no shared build in flight)
           timed="tests/test_grade_gpu.py tests/test_gpu.py tests/test_calibration.py tests/test_machine.py tests/test_fresh_rounds.py tests/test_fusion.py"
           others=$(python3 -m pytest -q -m gpu tests/ --collect-only -p no:cacheprovider 2>/dev/null | grep :: | cut -d: -f1 | sort -u | grep -vxF -f <(tr ' ' '\n' <<<"$timed"))
           (GRADER_CACHE=/tmp/gcache2 timeout ${GPU_TESTS_TIMEOUT:-300} python3 -m pytest -q -ra -m gpu $others -p no:cacheprovider --durations=0 > $OUT/gputests_built.log 2>&1; echo "rc=$?" >> $OUT/gputests_built.log) &
           timeout ${GPU_TESTS_TIMEOUT:-300} python3 -m pytest -q -ra -m gpu $timed -p no:cacheprovider --durations=0 > $OUT/gputests_timed.log 2>&1; echo "rc=$?" >> $OUT/gputests_timed.log; wait
           for f in $OUT/gputests_timed.log $OUT/gputests_built.log; do echo "== $f"; grep -E "passed|failed|FAILED|ERROR|rc=" $f | tail -8; done ;;
    suites) timeout ${SUITES_TIMEOUT:-300} python3 -m pytest -q -ra tests/test_grade.py tests/test_batch.py tests/test_fresh_rounds.py \
             tests/test_sandbox.py tests/test_sandbox_signals.py -p no:cacheprovider 2>&1 | tee $OUT/suites.log | tail -15 ;;
    tests) # the test files in $TESTS (a re-run of what changed), then each "EXERCISE FILE" of $CHECKS graded here
           timeout ${TESTS_TIMEOUT:-300} python3 -m pytest -q -ra $TESTS -p no:cacheprovider 2>&1 | tee $OUT/tests.log | tail -15
           echo "${CHECKS:-}" | tr ';' '\n' | while read -r ex file; do [ -n "$ex" ] && \
             timeout 60 python3 -m grader check $ex $file 2>&1 | tee -a $OUT/tests.log | tail -3; done ;;
    nbexec)  # H200 outputs of the solutions matching $NOTEBOOKS (default: all) -> $OUT/solutions/
           python3 -m ipykernel install --user --name python3 >/dev/null
           timeout ${NBEXEC_TIMEOUT:-300} python3 -m grader.course.notebooks --execute $OUT/solutions --only ${NOTEBOOKS:-"*"} 2>&1 | tee $OUT/nbexec.log | tail -5 ;;
    nbval) python3 -m ipykernel install --user --name python3 >/dev/null
           timeout ${NBVAL_TIMEOUT:-300} python3 -m pytest -q --nbval-lax ${NOTEBOOKS:-solutions/} -p no:cacheprovider 2>&1 | tee $OUT/nbval.log | tail -8 ;;
    gap5)  # why the grader times kernels/05 slower than gpu_tune.py (benchmarks/warptile_timing_gap.py)
           timeout ${GAP5_TIMEOUT:-150} python3 benchmarks/warptile_timing_gap.py 2>&1 | tee $OUT/gap5.log ;;
    relugap) timeout ${RELUGAP_TIMEOUT:-120} python3 benchmarks/relu_timing_gap.py 2>&1 | tee $OUT/relugap.log ;;
    latency) timeout ${LATENCY_TIMEOUT:-200} python3 benchmarks/verdict_latency.py --json $OUT/latency.json 2>&1 | tee $OUT/latency.log | tail -8 ;;
    calibrate)  # $CAL_EXERCISES (default: all), 3 grades each -> $OUT/calibration.json (thresholds for this GPU)
           timeout ${CAL_TIMEOUT:-400} python3 benchmarks/calibrate.py ${CAL_EXERCISES:+--exercises $CAL_EXERCISES} \
             --save $OUT/calibration.json 2>&1 | tee $OUT/calibration.log | tail -20 ;;
    training) timeout ${TRAINING_TIMEOUT:-200} python3 benchmarks/gpu_training.py --save $OUT/h200_training.json 2>&1 | tee $OUT/training.log | tail -20 ;;
    ncu)   timeout 120 ncu --clock-control none --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,gpu__time_duration.sum \
             python3 benchmarks/gpu_ncu_conflicts.py > $OUT/ncu.log 2>&1; grep -E "gemm_kernel|bank_conflicts|wavefronts|duration" $OUT/ncu.log | head -40 ;;
  esac
done
cat $OUT/smi.txt
