#!/bin/bash
# One device call: tune 05, run the full bench, count bank conflicts with ncu.
# Usage (on the GPU machine, repo root): bash benchmarks/gpu_h200.sh [tune|bench|ncu|fused|batch|flushcmp|test]...
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:$PYTHONPATH GRADER_CACHE=/tmp/gcache
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
steps=${@:-tune bench ncu}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv > $OUT/smi.txt 2>&1
(nvidia-smi dmon -s pc -d 2 > $OUT/dmon.txt 2>&1 &)
for s in $steps; do
  case $s in
    tune)  timeout 230 python3 benchmarks/gpu_tune.py relu gemm 2>&1 | tee $OUT/tune.log ;;
    bench) timeout ${BENCH_TIMEOUT:-300} python3 -m grader.bench --save $OUT/h200.json --plot $OUT/ladder.png 2>&1 | tee $OUT/bench.log ;;
    fused) TUNE_SECONDS=${TUNE_SECONDS:-4} timeout 200 python3 benchmarks/gpu_tune.py fused 2>&1 | tee $OUT/fused.log ;;
    batch) timeout 450 python3 benchmarks/batch_class.py 50 --jobs 16 --per-gpu ${PER_GPU:-2} 2>$OUT/batch.err | tee $OUT/batch.log ;;
    flushcmp)  # is the write-flush hurting small sizes? the same bench with each flush, warm-up 200 ms
           for f in write read; do timeout 120 python3 -m grader.bench --only gemm --sizes 1024 2048 4096 --shapes \
             --flush $f --warmup-ms 200 --save $OUT/flush_$f.json 2>/dev/null | grep -E "cublas|warptile|naive " | tee -a $OUT/flushcmp.log; done ;;
    tune2) TUNE_SECONDS=3 timeout 80 python3 benchmarks/gpu_tune.py gemm2 2>&1 | tee $OUT/tune2.log ;;
    pick)  # make the picked variant's -D values the defaults of 05 and 07 (same edit applied in the repo)
           for f in $(cat $OUT/pick.txt); do n=${f#-D}; sed -i "s/^#define ${n%%=*} .*/#define ${n%%=*} ${n#*=}/" kernels/05_warptile_pipelined.cu kernels/07_gemm_relu.cu; done
           grep -h "^#define \(BIG_\|FRAG\|GROUP\)" kernels/05_warptile_pipelined.cu | tee $OUT/defaults.txt ;;
    test)  timeout 200 python3 -m pytest -q -x tests/test_kernels.py -m gpu -p no:cacheprovider 2>&1 | tail -5 | tee $OUT/test.log ;;
    ncu)   timeout 120 ncu --clock-control none --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,gpu__time_duration.sum \
             python3 benchmarks/gpu_ncu_conflicts.py > $OUT/ncu.log 2>&1; grep -E "gemm_kernel|bank_conflicts|wavefronts|duration" $OUT/ncu.log | head -40 ;;
  esac
done
cat $OUT/smi.txt
