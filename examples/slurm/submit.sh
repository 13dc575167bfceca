#!/usr/bin/env bash
# Grade a class on a Slurm cluster: an array of shards, then one merge that runs only if all succeeded.
#   EXERCISE=tiled SUBS=$PWD/submissions examples/slurm/submit.sh
set -euo pipefail
here=$(dirname "$0")
jid=$(sbatch --parsable --export=ALL "$here/grade.sbatch")
sbatch --dependency=afterok:"$jid" --job-name=merge --output=merge_%j.out \
    --wrap "python -m grader merge grades.csv parts/grades_*.csv"
echo "array job $jid; the merged gradebook will be grades.csv"
