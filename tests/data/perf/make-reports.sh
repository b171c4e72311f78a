#!/bin/bash
# How the perf stat files of issue 22 were written (tests/data/perf/README.md lists them): real perf stat
# runs on this machine, in several locales and modes, some files holding several reports concatenated as a
# user would (perf's --append, `2>>`, a shell log). Run as root (system-wide -a needs it) into OUT:
#   bash tests/data/perf/make-reports.sh OUT
# Locales: localedef -i L -f UTF-8 L.UTF-8 for fr_FR pl_PL sv_SE de_CH en_IN de_DE en_US (Debian `locales`).
# The numbers differ on every run; the tests read the values from the files as perf printed them.
set -euo pipefail
OUT=${1:?usage: make-reports.sh OUTDIR}
mkdir -p "$OUT"
cd "$OUT"
W='x=bytearray(400_000_000); sum(range(300000))'   # about 100,000 page faults: grouping shows
EV=task-clock,context-switches,cpu-migrations,page-faults,instructions,cycles
export W

# One report per file.
LC_ALL=fr_FR.UTF-8 perf stat -e $EV -o human-fr_FR.txt -- sh -c "python3 -c \"$W\""
LC_ALL=fr_FR.UTF-8 perf stat -r 3 -e $EV -o human-r3-fr_FR.txt -- sh -c "python3 -c \"$W\""
LC_ALL=sv_SE.UTF-8 perf stat -e $EV -o human-sv_SE.txt -- sh -c "python3 -c \"$W\""
LC_ALL=de_CH.UTF-8 perf stat -e $EV -o human-de_CH.txt -- sh -c "python3 -c \"$W\""
LC_ALL=en_IN.UTF-8 perf stat -e $EV -o human-en_IN.txt -- sh -c "python3 -c \"$W\""
LC_ALL=pl_PL.UTF-8 perf stat -a -A -e task-clock,context-switches,page-faults -o human-A-pl_PL.txt -- sleep 0.2
LC_ALL=en_US.UTF-8 perf stat -a --per-core -e task-clock,context-switches,page-faults -o human-per-core.txt -- sleep 0.2
perf stat -a --per-socket -x, -e task-clock,context-switches,page-faults -o csv-per-socket.txt -- sleep 0.2
LC_ALL=fr_FR.UTF-8 perf stat -a -A -x';' -e task-clock,context-switches,page-faults -o csv-A-fr_FR.txt -- sleep 0.2
LC_ALL=fr_FR.UTF-8 perf stat -I 200 -e $EV -o human-interval-fr_FR.txt -- sh -c "python3 -c \"$W\""
perf stat -I 200 -x, -e $EV -o csv-interval.txt -- sh -c "python3 -c \"$W\""
# --per-thread on a running process with two busy threads (perf attaches with -p for 0.5 s).
T='import threading,time
def spin():
    t=time.time()
    while time.time()-t<2.5: [i for i in range(1000)]
ts=[threading.Thread(target=spin) for _ in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]'
python3 -c "$T" & P=$!; sleep 0.5
LC_ALL=fr_FR.UTF-8 perf stat --per-thread -e task-clock,context-switches,page-faults -p $P -o human-per-thread-fr_FR.txt -- sleep 0.5
perf stat --per-thread -x, -e task-clock,context-switches,page-faults -p $P -o csv-per-thread.txt -- sleep 0.5
wait $P

# Several reports in one file.
# perf's own --append: a C-locale report, a French one with -r 3, a German one.
rm -f multi-append.txt
perf stat --append -o multi-append.txt -e $EV -- sh -c "python3 -c \"$W\""
LC_ALL=fr_FR.UTF-8 perf stat --append -o multi-append.txt -r 3 -e $EV -- sh -c "python3 -c \"$W\""
LC_ALL=de_DE.UTF-8 perf stat --append -o multi-append.txt -e $EV -- sh -c "python3 -c \"$W\""

# Seven reports appended with 2>> (what a user collecting runs does), three of them French.
rm -f multi-seven.txt
for loc in C en_US.UTF-8 fr_FR.UTF-8 de_DE.UTF-8 fr_FR.UTF-8 en_US.UTF-8 fr_FR.UTF-8; do
  case $loc in de_DE.UTF-8|en_US.UTF-8) r=(-r 2) ;; *) r=() ;; esac
  LC_ALL=$loc perf stat "${r[@]}" -e $EV -- sh -c "python3 -c \"$W\"" 2>> multi-seven.txt
done

# -x, output appended with 2>> (no '# started on' line between runs), then a -x';' run in fr_FR.
rm -f multi-csv.txt
perf stat -x, -e $EV -- sh -c "python3 -c \"$W\"" 2>> multi-csv.txt
perf stat -x, -r 2 -e $EV -- sh -c "python3 -c \"$W\"" 2>> multi-csv.txt
LC_ALL=fr_FR.UTF-8 perf stat -x';' -e $EV -- sh -c "python3 -c \"$W\"" 2>> multi-csv.txt

# A shell log (bash -x, stdout and stderr together) with commands and their output around three reports.
cat > session.sh <<'EOF'
echo "run 1 of 3: $(date -u +%F)"
seq 1 3
LC_ALL=fr_FR.UTF-8 perf stat -e task-clock,page-faults -- sh -c "python3 -c \"$W\""
printf '%s\n' "12345 bytes copied" "3,4,5,6,7 are not counters"
perf stat -x, -e task-clock,page-faults -- sh -c "python3 -c \"$W\""
uname -s
LC_ALL=en_US.UTF-8 perf stat -r 2 -e task-clock,page-faults -- sh -c "python3 -c \"$W\""
echo done
EOF
bash -x session.sh > multi-shell-log.txt 2>&1
rm session.sh
