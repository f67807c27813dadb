#!/usr/bin/env bash
# bench-table.sh: run a go test -bench command of BenchmarkFleet,
# BenchmarkPlanScale and BenchmarkResourceCost, show its output on stderr
# and print its results as tables on stdout; exits with the command's status.
# Use: scripts/bench-table.sh go test -run '^$' -bench ... ./internal/provider
set -euo pipefail
"$@" 2>&1 | tee /dev/stderr | awk '
function metric(name) { return (name in m) ? m[name] : "-" }
function ratio(a, b) { return (a != "-" && b != "-" && b > 0) ? sprintf("%.2f", a / b) : "-" }
function num(v, format) { return (v == "-") ? "-" : sprintf(format, v) }
# A round-trip time in milliseconds, for sorting: 500us, 20ms, 1.5s.
function ms(rtt) {
  if (rtt == "-") return 0
  if (rtt ~ /ms$/) return rtt + 0
  if (rtt ~ /(us|µs)$/) return (rtt + 0) / 1000
  if (rtt ~ /s$/) return (rtt + 0) * 1000
  return rtt + 0
}
# The floor a resource is compared with: the one doing the same host work.
function family(res) { return (res == "kha_haproxy_config" || res == "ansible") ? "haproxy" : "file" }
# The order of resources within a network in the latency table.
function rank(res) {
  if (res == "kha_file") return 1
  if (res == "kha_file+rollout") return 2
  if (res == "provisioners") return 3
  if (res == "floor (file)") return 4
  if (res == "kha_haproxy_config") return 5
  if (res == "ansible") return 6
  if (res == "floor (haproxy)") return 7
  return 8
}
# Records a latency row: wall and round trips per phase of res in net.
function keep(res, net, prefix) {
  if (!((res, net) in seen)) { seen[res, net] = 1; lrow[++lrows] = res SUBSEP net }
  for (p = 1; p <= 3; p++) {
    ph = phases[p]
    wall[res, net, ph] = metric(prefix ph "-s"); rtts[res, net, ph] = metric(prefix ph "-rtts/host")
  }
}
BEGIN { split("first noop change norefresh", phases, " ") }
/^BenchmarkFleet\// {
  n = split($1, parts, "/"); res = parts[2]; cli = "-"; rtt = "-"; par = "-"; hosts = "-"
  sub(/-[0-9]+$/, "", parts[n])
  for (i = 3; i <= n; i++) {
    if (parts[i] ~ /^cli=/) { cli = parts[i]; sub(/^cli=/, "", cli) }
    if (parts[i] ~ /^hosts=/) { hosts = parts[i]; sub(/^hosts=/, "", hosts) }
    if (parts[i] ~ /^rtt=/) { rtt = parts[i]; sub(/^rtt=/, "", rtt) }
    if (parts[i] ~ /^p=/) { par = parts[i]; sub(/^p=/, "", par) }
  }
  delete m
  for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
  for (p = 1; p <= 4; p++) {
    ph = phases[p]
    if (!((ph "-s") in m)) continue
    # A change without refresh is compared with the change of the floor.
    floor = ph == "norefresh" ? "change" : ph
    state = metric(ph "-state-B/host")
    writes = metric(ph "-state-writes")
    fleet[++rows] = sprintf("| %-18s | %-14s | %5s | %5s | %3s | %-6s | %7.2f | %7s | %5s | %6.1f / %5s | %6s | %6.1f / %5s | %3.1f / %3s | %3.1f / %3s | %4.1f / %4s | %5s / %5s | %5s | %6s |",
      res, cli, hosts, rtt, par, ph, metric(ph "-s"), num(metric("raw-" floor "-s"), "%.2f"), ratio(metric(ph "-s"), metric("raw-" floor "-s")),
      metric(ph "-ctl-ms/host"), num(metric("raw-" floor "-ctl-ms/host"), "%.1f"), num(metric(ph "-provider-ms/host"), "%.1f"), metric(ph "-sshd-ms/host"), num(metric("raw-" floor "-sshd-ms/host"), "%.1f"),
      metric(ph "-conns/host"), num(metric("raw-" floor "-conns/host"), "%.1f"), metric(ph "-sessions/host"), num(metric("raw-" floor "-sessions/host"), "%.1f"),
      metric(ph "-procs/host"), num(metric("raw-" floor "-procs/host"), "%.1f"),
      num(metric(ph "-rtts/host"), "%.1f"), num(metric("raw-" floor "-rtts/host"), "%.1f"), state == "-" ? "-" : sprintf("%.1f", state / 1000), num(writes, "%d"))
  }
  if (rtt != "-") {
    net = cli SUBSEP rtt SUBSEP par SUBSEP hosts
    keep(res, net, "")
    if (("raw-first-s" in m) && (res == "kha_file" || res == "kha_haproxy_config")) {
      keep("floor (" family(res) ")", net, "raw-")
      has_floor[family(res), net] = 1
    }
    # A kind with a floor of its own (provisioners) is compared with it.
    if ("raw-first-s" in m) for (p = 1; p <= 3; p++) own_floor[res, net, phases[p]] = metric("raw-" phases[p] "-s")
  }
}
/^Benchmark(PlanScale|ResourceCost)\// {
  name = $1; sub(/^Benchmark[A-Za-z]+\//, "", name); sub(/-[0-9]+$/, "", name)
  delete m
  for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
  scale[++srows] = sprintf("| %-34s | %6s | %7s | %7s | %8s | %6s | %7s | %5s / %5s / %5s | %5s / %5s / %5s |", name,
    metric("plan-s"), metric("plan-cpu-s"), metric("apply-s"), metric("apply-cpu-s"), metric("noop-s"), metric("noop-cpu-s"),
    metric("plan-cpu-ms/res"), metric("apply-cpu-ms/res"), metric("noop-cpu-ms/res"),
    metric("plan-provider-cpu-s"), metric("apply-provider-cpu-s"), metric("noop-provider-cpu-s"))
}
# The floor res is compared with in net at phase ph.
function floor_of(res, net, ph) {
  if ((res, net, ph) in own_floor) return own_floor[res, net, ph]
  if ((family(res), net) in has_floor) return wall["floor (" family(res) ")", net, ph]
  return "-"
}
function secs(res, net, ph) { return ((res, net, ph) in wall) ? wall[res, net, ph] : "-" }
# "a X s vs b Y s (Z×)" for one phase, or "" when either is missing.
function versus(a, b, net, ph) {
  if (secs(a, net, ph) == "-" || secs(b, net, ph) == "-") return ""
  return sprintf("%s %.2f s vs %s %.2f s (%s×)", a, secs(a, net, ph), b, secs(b, net, ph), ratio(secs(a, net, ph), secs(b, net, ph)))
}
END {
  if (rows) {
    print "Fleet: each resource through its CLI vs the raw x/crypto/ssh floor (per host: resource / floor; state kB: Terraform'\''s state after an apply)"
    print ""
    print "| resource           | cli            | hosts | rtt   | P   | phase  | CLI s   | floor s | ratio | controller ms   | of it provider ms | sshd ms         | conns     | sessions  | processes   | round trips   | state kB | state writes |"
    print "|--------------------|----------------|------:|------:|----:|--------|--------:|--------:|------:|----------------:|------:|----------------:|----------:|----------:|------------:|--------------:|------:|------:|"
    for (i = 1; i <= rows; i++) print fleet[i]
    print ""
  }
  if (lrows) {
    print "Latency: wall seconds and round trips per host per phase behind relays of a round-trip time, at -parallelism (forks) P;"
    print "× floor is wall time over the floor doing the same host work (kha_file'\''s for files, kha_haproxy_config'\''s for HAProxy)"
    print ""
    print "| resource           | cli            | rtt   | P   | hosts | first s | noop s  | change s | first rtts | noop rtts | change rtts | first × floor | noop × floor | change × floor |"
    print "|--------------------|----------------|------:|----:|------:|--------:|--------:|---------:|-----------:|----------:|------------:|--------------:|-------------:|---------------:|"
    cmd = "sort | cut -f2-"
    for (i = 1; i <= lrows; i++) {
      split(lrow[i], k, SUBSEP); res = k[1]; net = k[2] SUBSEP k[3] SUBSEP k[4] SUBSEP k[5]
      line = sprintf("| %-18s | %-14s | %5s | %3s | %5s | %7s | %7s | %8s | %10s | %9s | %11s | %13s | %12s | %14s |", res, k[2], k[3], k[4], k[5],
        num(wall[res, net, "first"], "%.2f"), num(wall[res, net, "noop"], "%.2f"), num(wall[res, net, "change"], "%.2f"),
        num(rtts[res, net, "first"], "%.1f"), num(rtts[res, net, "noop"], "%.1f"), num(rtts[res, net, "change"], "%.1f"),
        res ~ /^floor/ ? "1.00" : ratio(wall[res, net, "first"], floor_of(res, net, "first")),
        res ~ /^floor/ ? "1.00" : ratio(wall[res, net, "noop"], floor_of(res, net, "noop")),
        res ~ /^floor/ ? "1.00" : ratio(wall[res, net, "change"], floor_of(res, net, "change")))
      printf "%-14s %012.3f %06d %07d %d\t%s\n", k[2], ms(k[3]), k[4], k[5], rank(res), line | cmd
      nets[net] = sprintf("%-14s %012.3f %06d %07d", k[2], ms(k[3]), k[4], k[5])
    }
    close(cmd)
    print ""
    print "Who wins: kha_haproxy_config vs ansible, kha_file vs provisioners (wall time), and the fastest of the four"
    print ""
    for (net in nets) {
      split(net, k, SUBSEP)
      text = sprintf("- %srtt %s, P %s, %s hosts:", k[1] == "-" ? "" : k[1] ", ", k[2], k[3], k[4])
      for (p = 1; p <= 3; p++) {
        ph = phases[p]; best = ""
        split("kha_file kha_haproxy_config provisioners ansible", four, " ")
        for (j = 1; j <= 4; j++) if (secs(four[j], net, ph) != "-" && (best == "" || secs(four[j], net, ph) + 0 < secs(best, net, ph) + 0)) best = four[j]
        parts_text = versus("kha_haproxy_config", "ansible", net, ph)
        other = versus("kha_file", "provisioners", net, ph)
        if (other != "") parts_text = parts_text (parts_text != "" ? "; " : "") other
        if (best != "") parts_text = parts_text (parts_text != "" ? "; " : "") "fastest " best
        text = text " " ph ": " (parts_text == "" ? "-" : parts_text) (p < 3 ? "." : "")
      }
      print nets[net] "\t" text | cmd
    }
    close(cmd)
    print ""
  }
  if (srows) {
    print "Scale: through the terraform CLI (controller CPU: terraform and the provider; apply includes its plan; no-op: a plan with refresh after the apply)"
    print ""
    print "| configuration                      | plan s | plan CPU s | apply s | apply CPU s | no-op s | no-op CPU s | CPU ms per resource: plan / apply / no-op | of the CPU, the provider s: plan / apply / no-op |"
    print "|------------------------------------|-------:|--------:|--------:|---------:|-------:|--------:|----------------------:|----------------------:|"
    for (i = 1; i <= srows; i++) print scale[i]
  }
}'
