"""Solve the timetable engine's benchmark instances with integer programming and compare.

Reads the instances and the engine's results written by the Rust example `timetable_dump`,
solves each instance with
  * an ILP (PuLP + the CBC binary bundled in its wheel): a time-indexed model, and
  * OR-Tools CP-SAT: an interval model with optional intervals and no-overlap constraints,
each minimising the latest finish time under a 60 s limit, and prints a side-by-side table.

Both models follow the engine's rules exactly (lib/events/src/timetable/mod.rs):
  * a session runs once, on one day, in one room that is big enough (or the required room),
    inside one of the room's availability windows and the day's hours; pinned ones are fixed;
  * sessions in one room are at least the changeover apart; sessions of one speaker at least
    the rest apart; sessions of one track do not overlap;
  * one lunch slot per day inside the lunch window, shared by every room: no session overlaps it;
  * if B must come after A: B on a later day, or the same day starting at or after A's end
    (plus the changeover when in the same room, which the room constraint already enforces);
  * objective: the latest end time (time of day) over all sessions.

Usage: compare.py FOLDER [--solvers cbc,cpsat] [--only SUBSTRING] [--limit SECONDS]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import defaultdict
from pathlib import Path

TIME_LIMIT_S = 60


def minutes(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def hhmm(m: int | None) -> str:
    return "-" if m is None else f"{m // 60:02d}:{m % 60:02d}"


class Instance:
    """The JSON input resolved into plain Python structures (times in minutes)."""

    def __init__(self, raw: dict):
        self.days = sorted(raw["days"], key=lambda d: d["date"])
        self.day_idx = {d["date"]: i for i, d in enumerate(self.days)}
        self.rooms = raw["rooms"]
        self.room_idx = {r["id"]: i for i, r in enumerate(self.rooms)}
        self.sessions = raw["sessions"]
        self.sid = {s["id"]: i for i, s in enumerate(self.sessions)}
        self.lunch = raw.get("lunch")
        self.co = raw.get("changeover_minutes", 0)
        self.rest = raw.get("speaker_rest_minutes", 0)
        self.llen = self.lunch["length_minutes"] if self.lunch else 0

    def windows(self, ri: int, d: int) -> list[tuple[int, int]]:
        day = self.days[d]
        ds, de = minutes(day["start"]), minutes(day["end"])
        room = self.rooms[ri]
        if not room.get("availability"):
            return [(ds, de)]
        ws = sorted(
            (max(minutes(w["start"]), ds), min(minutes(w["end"]), de))
            for w in room["availability"]
            if w["date"] == day["date"]
        )
        merged: list[list[int]] = []
        for a, b in ws:
            if a >= b:
                continue
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        return [(a, b) for a, b in merged]

    def allowed_rooms(self, s: dict) -> list[int]:
        return [
            ri
            for ri, r in enumerate(self.rooms)
            if r["capacity"] >= s.get("min_capacity", 0) and (not s.get("room") or s["room"] == r["id"])
        ]

    def lunch_range(self, d: int) -> tuple[int, int] | None:
        """Inclusive range of lunch starts on day d, or None when the day has no lunch."""
        if not self.lunch or self.llen <= 0:
            return None
        day = self.days[d]
        lo = max(minutes(self.lunch["earliest_start"]), minutes(day["start"]))
        hi = min(minutes(self.lunch["latest_end"]), minutes(day["end"])) - self.llen
        return (lo, hi) if lo <= hi else None

    def slot(self) -> int:
        """The gcd of every time and duration: a time grid on which the ILP is exact."""
        values = [self.co, self.rest, self.llen]
        for d in self.days:
            values += [minutes(d["start"]), minutes(d["end"])]
        for r in self.rooms:
            for w in r.get("availability", []):
                values += [minutes(w["start"]), minutes(w["end"])]
        for s in self.sessions:
            values.append(s["duration_minutes"])
            if s.get("pinned"):
                values.append(minutes(s["pinned"]["start"]))
        if self.lunch:
            values += [minutes(self.lunch["earliest_start"]), minutes(self.lunch["latest_end"])]
        g = 0
        for v in values:
            g = math.gcd(g, v)
        return g or 1


def solve_cbc(inst: Instance) -> dict:
    """Time-indexed ILP: x[s,r,d,t] = 1 when s starts at slot t in room r on day d."""
    import pulp

    built = time.perf_counter()
    slot = inst.slot()
    prob = pulp.LpProblem("timetable", pulp.LpMinimize)
    x: dict[int, list[tuple[int, int, int, pulp.LpVariable]]] = defaultdict(list)
    for si, s in enumerate(inst.sessions):
        dur = s["duration_minutes"]
        pin = s.get("pinned")
        for ri in inst.allowed_rooms(s):
            for d in range(len(inst.days)):
                for a, b in inst.windows(ri, d):
                    t = a + (-a % slot)
                    while t + dur <= b:
                        if not pin or (
                            inst.room_idx[pin["room"]] == ri
                            and inst.day_idx[pin["date"]] == d
                            and minutes(pin["start"]) == t
                        ):
                            x[si].append((ri, d, t, pulp.LpVariable(f"x_{si}_{ri}_{d}_{t}", cat="Binary")))
                        t += slot
        if not x[si]:
            return {"status": "infeasible", "finish": None, "seconds": 0.0, "build_seconds": 0.0}

    y: dict[int, list[tuple[int, pulp.LpVariable]]] = defaultdict(list)
    for d in range(len(inst.days)):
        rng = inst.lunch_range(d)
        if rng is None:
            continue
        lo, hi = rng
        l = lo + (-lo % slot)
        while l <= hi:
            y[d].append((l, pulp.LpVariable(f"y_{d}_{l}", cat="Binary")))
            l += slot
        if y[d]:
            prob += pulp.lpSum(v for _, v in y[d]) == 1

    M = pulp.LpVariable("latest_finish", lowBound=0)
    prob += M
    room_rows, lunch_rows, speaker_rows, track_rows = (defaultdict(list) for _ in range(4))
    for si, s in enumerate(inst.sessions):
        dur = s["duration_minutes"]
        prob += pulp.lpSum(v for *_, v in x[si]) == 1
        prob += M >= pulp.lpSum((t + dur) * v for _, _, t, v in x[si])
        track = s.get("track")
        for ri, d, t, v in x[si]:
            # A session occupies its room for its length plus the changeover, its speakers for
            # its length plus the rest: pairwise non-overlap of these gives the gaps.
            for u in range(t, t + dur + inst.co, slot):
                room_rows[(ri, d, u)].append(v)
            if y.get(d):
                for u in range(t, t + dur, slot):
                    lunch_rows[(ri, d, u)].append(v)
            for sp in s.get("speakers", []):
                for u in range(t, t + dur + inst.rest, slot):
                    speaker_rows[(sp, d, u)].append(v)
            if track:
                for u in range(t, t + dur, slot):
                    track_rows[(track, d, u)].append(v)
    for rows in (room_rows, speaker_rows, track_rows):
        for vs in rows.values():
            if len(vs) > 1:
                prob += pulp.lpSum(vs) <= 1
    for d, ls in y.items():
        for ri in range(len(inst.rooms)):
            for u in range(ls[0][0], ls[-1][0] + inst.llen, slot):
                cover = [v for l, v in ls if l <= u < l + inst.llen]
                vs = lunch_rows.get((ri, d, u), [])
                if vs and cover:
                    prob += pulp.lpSum(vs) + pulp.lpSum(cover) <= 1

    def absolute(si: int):
        return pulp.lpSum((d * 1440 + t) * v for _, d, t, v in x[si])

    for bi, s in enumerate(inst.sessions):
        for a in s.get("after", []):
            ai = inst.sid[a]
            prob += absolute(bi) >= absolute(ai) + inst.sessions[ai]["duration_minutes"]

    build_seconds = time.perf_counter() - built
    started = time.perf_counter()
    prob.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=TIME_LIMIT_S, threads=1))
    seconds = time.perf_counter() - started
    status = {
        pulp.LpSolutionOptimal: "optimal",
        pulp.LpSolutionIntegerFeasible: "time limit",
        pulp.LpSolutionInfeasible: "infeasible",
    }.get(prob.sol_status, "no solution")
    finish = None
    if status in ("optimal", "time limit"):
        finish = max(
            t + inst.sessions[si]["duration_minutes"]
            for si in x
            for _, _, t, v in x[si]
            if (v.value() or 0) > 0.5
        )
    return {"status": status, "finish": finish, "seconds": seconds, "build_seconds": build_seconds}


def solve_cpsat(inst: Instance, workers: int) -> dict:
    """CP-SAT: a start per session, a literal per (session, room, day), optional intervals."""
    from ortools.sat.python import cp_model

    built = time.perf_counter()
    m = cp_model.CpModel()
    horizon = max(minutes(d["end"]) for d in inst.days)
    nd = len(inst.days)
    start, dayof, ends = {}, {}, []
    room_iv = defaultdict(list)  # (r, d) -> intervals extended by the changeover
    room_plain = defaultdict(list)  # (r, d) -> plain intervals, for lunch
    person_iv = defaultdict(list)  # (speaker, d) -> intervals extended by the rest
    track_iv = defaultdict(list)  # (track, d) -> plain intervals
    for si, s in enumerate(inst.sessions):
        dur = s["duration_minutes"]
        S = m.NewIntVar(0, horizon, f"s{si}")
        start[si] = S
        ends.append(S + dur)
        q = [m.NewBoolVar(f"q{si}_{d}") for d in range(nd)]
        m.AddExactlyOne(q)
        dayof[si] = sum(d * q[d] for d in range(nd))
        lits_per_day = defaultdict(list)
        pin = s.get("pinned")
        for ri in inst.allowed_rooms(s):
            for d in range(nd):
                spans = [(a, b - dur) for a, b in inst.windows(ri, d) if b - a >= dur]
                if pin:
                    p0 = minutes(pin["start"])
                    ok = inst.room_idx[pin["room"]] == ri and inst.day_idx[pin["date"]] == d
                    spans = [(p0, p0)] if ok and any(a <= p0 <= b for a, b in spans) else []
                if not spans:
                    continue
                p = m.NewBoolVar(f"p{si}_{ri}_{d}")
                m.AddLinearExpressionInDomain(S, cp_model.Domain.FromIntervals(spans)).OnlyEnforceIf(p)
                room_iv[(ri, d)].append(m.NewOptionalFixedSizeIntervalVar(S, dur + inst.co, p, "r"))
                room_plain[(ri, d)].append(m.NewOptionalFixedSizeIntervalVar(S, dur, p, "rp"))
                lits_per_day[d].append(p)
        if not lits_per_day:
            return {"status": "infeasible", "finish": None, "seconds": 0.0, "build_seconds": 0.0, "bound": None}
        for d in range(nd):
            if lits_per_day[d]:
                m.Add(sum(lits_per_day[d]) == 1).OnlyEnforceIf(q[d])
                m.Add(sum(lits_per_day[d]) == 0).OnlyEnforceIf(q[d].Not())
            else:
                m.Add(q[d] == 0)
            for sp in s.get("speakers", []):
                person_iv[(sp, d)].append(m.NewOptionalFixedSizeIntervalVar(S, dur + inst.rest, q[d], "sp"))
            if s.get("track"):
                track_iv[(s["track"], d)].append(m.NewOptionalFixedSizeIntervalVar(S, dur, q[d], "tr"))
    for ivs in list(room_iv.values()) + list(person_iv.values()) + list(track_iv.values()):
        if len(ivs) > 1:
            m.AddNoOverlap(ivs)
    for d in range(nd):
        rng = inst.lunch_range(d)
        if rng is None:
            continue
        L = m.NewIntVar(rng[0], rng[1], f"lunch{d}")
        lunch = m.NewFixedSizeIntervalVar(L, inst.llen, f"lunchiv{d}")
        for ri in range(len(inst.rooms)):
            if room_plain[(ri, d)]:
                m.AddNoOverlap(room_plain[(ri, d)] + [lunch])
    for bi, s in enumerate(inst.sessions):
        for a in s.get("after", []):
            ai = inst.sid[a]
            m.Add(
                dayof[bi] * 1440 + start[bi] >= dayof[ai] * 1440 + start[ai] + inst.sessions[ai]["duration_minutes"]
            )
    M = m.NewIntVar(0, horizon, "latest_finish")
    m.AddMaxEquality(M, ends)
    m.Minimize(M)
    build_seconds = time.perf_counter() - built
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = TIME_LIMIT_S
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = 1
    started = time.perf_counter()
    st = solver.Solve(m)
    seconds = time.perf_counter() - started
    status = {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "time limit",
        cp_model.INFEASIBLE: "infeasible",
    }.get(st, "no solution")
    finish = int(solver.ObjectiveValue()) if status in ("optimal", "time limit") else None
    bound = int(math.ceil(solver.BestObjectiveBound())) if status in ("optimal", "time limit") else None
    return {"status": status, "finish": finish, "seconds": seconds, "build_seconds": build_seconds, "bound": bound}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--solvers", default="cbc,cpsat")
    ap.add_argument("--workers", type=int, default=2, help="CP-SAT search workers")
    ap.add_argument("--only", default="", help="only instances whose name contains this")
    ap.add_argument("--limit", type=int, default=TIME_LIMIT_S, help="seconds per solver and instance")
    args = ap.parse_args()
    globals()["TIME_LIMIT_S"] = args.limit
    folder = Path(args.folder)
    solvers = [s for s in args.solvers.split(",") if s]
    engine = json.loads((folder / "engine.json").read_text())
    cols = ["instance", "engine: feasible", "finish", "time"]
    if "cbc" in solvers:
        cols += ["CBC ILP: status", "finish", "time"]
    if "cpsat" in solvers:
        cols += ["CP-SAT: status", "finish", "bound", "time"]
    cols += ["engine vs best", "speed-up"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    results = []
    for e in engine:
        if args.only not in e["name"]:
            continue
        inst = Instance(json.loads((folder / f"{e['name']}.json").read_text()))
        row = [e["name"], "yes" if e["feasible"] else "no", hhmm(e.get("latest_finish")), f"{e['ms']:.0f} ms"]
        out = {"name": e["name"], "engine": e}
        best, slowest = None, 0.0
        if "cbc" in solvers:
            r = solve_cbc(inst)
            out["cbc"] = r
            row += [r["status"], hhmm(r["finish"]), f"{r['seconds'] + r['build_seconds']:.1f} s"]
        if "cpsat" in solvers:
            r = solve_cpsat(inst, args.workers)
            out["cpsat"] = r
            row += [r["status"], hhmm(r["finish"]), hhmm(r["bound"]), f"{r['seconds'] + r['build_seconds']:.1f} s"]
        for key in ("cbc", "cpsat"):
            if key in out and out[key]["finish"] is not None:
                best = out[key]["finish"] if best is None else min(best, out[key]["finish"])
            if key in out:
                slowest = max(slowest, out[key]["seconds"] + out[key]["build_seconds"])
        ef = e.get("latest_finish")
        if ef is not None and best is not None:
            # Relative to the time since the day starts: the part any solver controls.
            day0 = min(minutes(d["start"]) for d in inst.days)
            row.append(f"{100.0 * (ef - best) / max(1, best - day0):+.1f} %")
        else:
            row.append("-")
        cbc_time = out.get("cbc", {}).get("seconds", 0) + out.get("cbc", {}).get("build_seconds", 0)
        ref = cbc_time if "cbc" in out else slowest
        row.append(f"{ref * 1000.0 / max(e['ms'], 1e-3):,.0f}x")
        print("| " + " | ".join(row) + " |", flush=True)
        results.append(out)
    (folder / "comparison.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
