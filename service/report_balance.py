"""The balance study's row of `service.report`: ``azulsim balance --json`` drawn.

Four panels from the document's ``balance_sheet`` (`sim.experiments.balance_lab.balance_document`):
the balance table (each measure's value per player count and rule set, the paired difference to the
first rule set beside it), the lead-change distribution, the decisiveness curve (share of games
whose winner leads for good from round d on, cumulative), and the restricted-play win rates with
their 95 % intervals against the fair share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TABLE_MEASURES = ("balance", "first_player", "lead_changes", "decisive")


def _short(value: float | None, diff: float | None) -> str:
    text = "-" if value is None else f"{value:.2f}"
    if diff is not None:
        text += f" ({diff:+.2f})"
    return text


def _series(sheet: Mapping[str, Any]):
    for table in sheet["tables"]:
        for row in table["rule_sets"]:
            yield table["players"], row


def draw_balance(sub, doc: Mapping[str, Any]) -> None:
    sheet = doc["balance_sheet"]
    sub.suptitle("balance of the rule sets (paired difference to the first in brackets)")
    ax_table, ax_lead, ax_decisive, ax_restricted = sub.subplots(1, 4, width_ratios=(1.5, 1, 1, 1))
    rows = list(_series(sheet))
    ax_table.axis("off")
    if rows:
        cells = [
            [
                _short(r["measures"][m]["value"], r["measures"][m].get("diff"))
                for m in TABLE_MEASURES
            ]
            for _p, r in rows
        ]
        table = ax_table.table(
            cellText=cells,
            rowLabels=[f"{p}p {r['rule_set']}" for p, r in rows],
            colLabels=[m.replace("_", " ") for m in TABLE_MEASURES],
            loc="center",
        )
        table.auto_set_font_size(False)
        table.set_fontsize(6)
        table.scale(1.0, 1.2)
    for p, r in rows:
        hist = r["lead_change_histogram"]
        total = sum(hist) or 1
        ax_lead.plot(
            range(len(hist)), [h / total for h in hist], marker=".", label=f"{p}p {r['rule_set']}"
        )
        dec = r["decisive_histogram"]
        total = sum(dec) or 1
        running, curve = 0, []
        for h in dec:
            running += h
            curve.append(running / total)
        # decisive >= 1: bin 0 is always empty
        ax_decisive.plot(range(1, len(dec)), curve[1:], marker=".", label=f"{p}p {r['rule_set']}")
    ax_lead.set_xlabel("lead changes per game")
    ax_lead.set_ylabel("share of games")
    ax_lead.set_xlim(-0.5, 12.5)
    ax_decisive.set_xlabel("round from which the winner leads for good")
    ax_decisive.set_ylabel("share of games decided by then")
    ax_decisive.set_xlim(0.5, 10.5)
    for ax in (ax_lead, ax_decisive):
        if rows:
            ax.legend(fontsize=7)
    labels, rates, errs, fair = [], [], [[], []], []
    for table in sheet["tables"]:
        for r in table["restricted"]:
            if r["win_rate"] is None:
                continue
            lo, hi = r["win_rate_ci95"]
            labels.append(f"{table['players']}p never {r['element']}")
            rates.append(r["win_rate"])
            errs[0].append(r["win_rate"] - lo)
            errs[1].append(hi - r["win_rate"])
            fair.append(r["fair_share"])
    if labels:
        y = range(len(labels))
        ax_restricted.barh(y, rates, xerr=errs, color="C1", alpha=0.8)
        ax_restricted.scatter(
            fair, y, marker="D", s=25, color="C3", zorder=3, label="fair share 1/P"
        )
        ax_restricted.set_yticks(list(y), labels, fontsize=7)
        ax_restricted.invert_yaxis()
        ax_restricted.legend(fontsize=7)
    ax_restricted.set_xlabel("win rate of the restricted bot (95 % Wilson)")
    ax_restricted.set_xlim(0, 1)
