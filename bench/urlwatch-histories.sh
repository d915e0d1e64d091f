#!/usr/bin/env bash
# CPU side by side of urlwatch (Debian) and changedigest over real page histories: every page of
# DIR (a directory holding two or more *.html versions, sorted by name) gets its own loopback
# address; step k serves version k of every page (pages with fewer versions keep their last one),
# then urlwatch and `changedigest check --all` each check every page once. Step 0 stores the first
# versions and is not counted; the CPU (user+sys, whole processes, start-up included) of the
# other steps is summed per tool.
# Usage: urlwatch-histories.sh CD_BIN [DIR (default ../shared/corpus/versions)] [MAX_STEPS]
set -eu
cd_bin=$(readlink -f "$1"); root=${2:-../shared/corpus/versions}; max=${3:-100000}
tmp=$(mktemp -d); mkdir -p $tmp/cfg
port=$((20000 + RANDOM % 20000))
pids=()
trap 'kill ${pids[@]} 2>/dev/null; rm -rf $tmp' EXIT
mapfile -t dirs < <(find "$root" -name '*.html' -printf '%h\n' | sort | uniq -c | awk '$1 >= 2 {print $2}')
: > $tmp/cfg/urls.yaml
i=0; steps=0
for d in "${dirs[@]}"; do
  mkdir -p $tmp/site$i
  find "$d" -maxdepth 1 -name '*.html' | sort > $tmp/list$i
  n=$(wc -l < $tmp/list$i); [ $n -gt $steps ] && steps=$n
  addr=127.0.0.$((i + 2))
  printf -- "---\nname: p%s\nurl: http://%s:%s/page.html\n" $i $addr $port >> $tmp/cfg/urls.yaml
  (cd $tmp/site$i && exec /usr/bin/python3 -m http.server $port --bind $addr >/dev/null 2>&1) & pids+=($!)
  i=$((i + 1))
done
pages=$i; [ $steps -gt $max ] && steps=$max
sleep 1
uw() { urlwatch --urls $tmp/cfg/urls.yaml --config $tmp/cfg/urlwatch.yaml --cache $tmp/cfg/cache.db; }
# time(1) adds a line when a command exits non-zero (a page failed to load): skip it.
cpu() { awk '$1 ~ /^[0-9.]+$/ {s += $1 + $2} END {printf "%.3f", s}' "$1"; }
: > $tmp/t.uw; : > $tmp/t.cd
checks=0
for ((k = 0; k < steps; k++)); do
  for ((p = 0; p < pages; p++)); do
    f=$(sed -n "$((k + 1))p" $tmp/list$p)
    if [ -n "$f" ]; then cp "$f" $tmp/site$p/page.html; touch $tmp/site$p/page.html; fi
  done
  if [ $k -eq 0 ]; then
    uw >/dev/null 2>&1 || true
    for ((p = 0; p < pages; p++)); do
      "$cd_bin" watch add --data $tmp/cd-data --allow-private --every 1h "http://127.0.0.$((p + 2)):$port/page.html" >/dev/null 2>&1
    done
    "$cd_bin" check --all --data $tmp/cd-data --allow-private >/dev/null 2>&1 || true
    continue
  fi
  sleep 1.1 # a new second for Last-Modified
  /usr/bin/time -f "%U %S %M" -a -o $tmp/t.uw urlwatch --urls $tmp/cfg/urls.yaml --config $tmp/cfg/urlwatch.yaml --cache $tmp/cfg/cache.db >/dev/null 2>&1 || true
  /usr/bin/time -f "%U %S %M" -a -o $tmp/t.cd "$cd_bin" check --all --data $tmp/cd-data --allow-private >/dev/null 2>&1 || true
  checks=$((checks + pages))
done
u=$(cpu $tmp/t.uw); c=$(cpu $tmp/t.cd)
um=$(awk '$1 ~ /^[0-9.]+$/ && $3 > m {m = $3} END {print m + 0}' $tmp/t.uw); cm=$(awk '$1 ~ /^[0-9.]+$/ && $3 > m {m = $3} END {print m + 0}' $tmp/t.cd)
/usr/bin/python3 -c "
u,c,n,um,cm=$u,$c,$checks,$um,$cm
print(f'{$pages} pages, {$steps} steps, {n} checks counted')
print(f'urlwatch: cpu {u/n*1000:.1f} ms/check, peak {um/1024:.0f} MB')
print(f'changedigest: cpu {c/n*1000:.1f} ms/check, peak {cm/1024:.0f} MB')
print(f'cpu ratio urlwatch/changedigest {u/max(c,1e-3):.1f}x (whole processes, start-up included)')"
