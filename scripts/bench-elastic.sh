#!/bin/bash
# The elastic benchmark: 4 LeNet workers over tcp, undisturbed vs one killed at a random step.
cd "$(dirname "$0")/.."
ITERS=${ITERS:-1000}
common="train --transport tcp --workers 4 --elastic 2:4 --scheme sync-ring --iters $ITERS --test-interval 0 --display 100"
echo "== undisturbed $(date +%T)"
rm -rf ${TMPDIR:-/tmp}/elb_u; ./dsgd $common --snapshot-prefix ${TMPDIR:-/tmp}/elb_u/s > ${TMPDIR:-/tmp}/elb_u.out 2> ${TMPDIR:-/tmp}/elb_u.err; echo "exit $?"
grep -E 'final test|^done|generation' ${TMPDIR:-/tmp}/elb_u.out
echo "== disturbed $(date +%T)"
rm -rf ${TMPDIR:-/tmp}/elb_d; ./dsgd $common --snapshot-prefix ${TMPDIR:-/tmp}/elb_d/s > ${TMPDIR:-/tmp}/elb_d.out 2> ${TMPDIR:-/tmp}/elb_d.err &
pid=$!
until grep -q 'iter  *100/' ${TMPDIR:-/tmp}/elb_d.out 2>/dev/null; do sleep 0.2; done
delay=$(python3 -c "import random; print(round(random.uniform(2, 40), 1))")
sleep $delay
victim=$(pgrep -f -- "worker --rank 2 --world" | head -1)
t0=$(date +%s.%N); echo "killing rank 2 (pid $victim) after $delay s more, at $(date +%T.%N)"
kill -9 $victim
wait $pid; echo "exit $?"
grep -E 'final test|^done|generation|snapshot' ${TMPDIR:-/tmp}/elb_d.out
grep -E 'gone|generation 2' ${TMPDIR:-/tmp}/elb_d.err
ls ${TMPDIR:-/tmp}/elb_d ${TMPDIR:-/tmp}/elb_u
