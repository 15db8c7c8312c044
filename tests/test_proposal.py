"""`dpcore schema`: a proposed schema for the owner to review and declare (issue 22), and CSV codebooks."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.cli import main
from dpcore.errors import DomainError
from dpcore.privacy.ledger import Ledger
from dpcore.proposal import OWNER_ONLY, codebook_from_csv, propose_schema, round_outward
from dpcore.workspace import Workspace

from .tables import QUICK_FIT
from .test_schema_plan import _survey


@pytest.mark.parametrize(
    "lo, hi, integer, expected",
    [(18, 96, True, (10, 100)), (0, 38, True, (0, 40)), (3, 19_870, True, (0, 20_000)), (0.12, 0.97, False, (0.1, 1.0)),
     (-3.5, 7.25, False, (-4, 8)), (5, 5, True, (5, 6))],
)  # fmt: skip
def test_bounds_are_rounded_outward_to_round_values(lo, hi, integer, expected):
    out = round_outward(lo, hi, integer)
    assert out == pytest.approx(expected) and out[0] <= lo and out[1] >= hi


def test_the_proposal_flags_rare_values_and_missing_cells_and_says_it_is_not_private():
    rng = np.random.default_rng(0)
    n = 2000
    df = pd.DataFrame(
        {
            "person_id": np.arange(n).astype(str),
            "country": np.where(np.arange(n) == 7, "Atlantis", rng.choice(["FR", "DE"], n)).astype(object),
            "age": rng.integers(18, 97, n).astype(str),
            "admitted": [f"2014-{m:02d}-10" for m in rng.integers(1, 13, n)],
        }
    ).astype(object)
    df.loc[3, "age"] = None
    out = propose_schema(df)
    assert out["note"] == OWNER_ONLY and out["complete"] is True
    by = {a["name"]: a for a in out["attributes"]}
    assert by["person_id"] == {"name": "person_id", "kind": "excluded"} and "person_id" in out["review"]["excluded"]
    assert by["country"]["values"] == ["Atlantis", "DE", "FR"] and out["review"]["rare_values"] == {
        "country": ["Atlantis"]
    }
    assert (
        by["age"]["kind"] == "numeric"
        and by["age"]["integer"]
        and (by["age"]["lower"], by["age"]["upper"]) == (10, 100)
    )
    assert by["age"]["missing"] is True and by["country"]["missing"] is False
    assert (by["admitted"]["lower"], by["admitted"]["upper"]) == ("2014-01-01", "2014-12-31")


def test_a_csv_codebook_declares_value_sets():
    book = codebook_from_csv("\ufeffColumn,Value\nsex,F\nsex,M\ngrade,a\ngrade,b\ngrade,a\n")
    assert book == {
        "attributes": [
            {"name": "sex", "kind": "categorical", "values": ["F", "M"]},
            {"name": "grade", "kind": "categorical", "values": ["a", "b"]},
        ]
    }
    with pytest.raises(DomainError, match="column"):
        codebook_from_csv("name,allowed\nsex,F\n")


def test_a_codebook_file_is_read_as_tables_are_and_a_binary_one_is_refused_with_a_message(tmp_path, capsys):
    """A codebook kept by a spreadsheet in Latin-1 declares its accented values; a binary file given as a codebook
    is refused with what to fix (it raised a UnicodeDecodeError's traceback)."""
    data = tmp_path / "t.csv"
    data.write_bytes(("ville,n\n" + "".join(f"{'Montréal' if i % 3 else 'Québec'},{i % 4}\n" for i in range(300)))
                     .encode("latin-1"))  # fmt: skip
    book = tmp_path / "book.csv"
    book.write_bytes("column,value\nville,Montréal\nville,Québec\n".encode("latin-1"))
    out = tmp_path / "o.csv"
    argv = ["release", "--data", str(data), "--epsilon", "1", "--seed", "0", "--quiet", "--workspace",
            str(tmp_path / "ws"), *QUICK_FIT]  # fmt: skip
    assert main([*argv, "--schema", str(book), "--out", str(out)]) == 0
    assert set(pd.read_csv(out)["ville"]) <= {"Montréal", "Québec"}
    binary = tmp_path / "book2.csv"
    binary.write_bytes(bytes(range(256)) * 4)
    assert main([*argv, "--schema", str(binary), "--out", str(tmp_path / "o2.csv")]) == 2
    err = capsys.readouterr().err
    assert "looks like a binary file, not a codebook" in err and "Traceback" not in err
    assert len({e["run"] for e in Ledger(Workspace(tmp_path / "ws")).entries()}) == 1  # the refused run: nothing


def test_propose_review_declare_releases_all_21_columns_of_the_refused_table_at_no_schema_cost(tmp_path):
    """Issue 22: the 1,000 × 21 table the plan refuses at defaults releases every column once its proposal is
    declared: nothing is discovered, the ledger holds the release only, the card marks every field declared."""
    path = tmp_path / "survey.csv"
    _survey(1000).to_csv(path, index=False)
    proposal = tmp_path / "schema.json"
    assert main(["schema", str(path), "--out", str(proposal)]) == 0
    ws, card = tmp_path / "ws", tmp_path / "card.json"
    argv = ["release", "--data", str(path), "--schema", str(proposal), "--epsilon", "1", "--seed", "2", "--quiet"]
    argv += QUICK_FIT  # the schema is what is tested here: a shorter fit, the same columns and card
    assert main([*argv, "--workspace", str(ws), "--card", str(card), "--out", str(tmp_path / "o.csv")]) == 0
    c = json.loads(card.read_text())
    assert [a["name"] for a in c["data"]["schema"]] == list(_survey(5).columns)
    assert all(set(a["source"].values() if isinstance(a["source"], dict) else [a["source"]]) == {"declared"}
               for a in c["data"]["schema"])  # fmt: skip
    assert "schema_discovery" not in c["data"]
    [entry] = Ledger(Workspace(ws)).entries()
    assert entry["epsilon"] == pytest.approx(1.0) and entry["mechanism"] == "projection"
    back = pd.read_csv(tmp_path / "o.csv", dtype=str, keep_default_na=False)
    assert not (back == "").any().any() and not (back == "(other)").any().any()  # complete, no missing: as declared


def test_the_library_reads_the_files_the_cli_reads(tmp_path):
    """``Synthesizer(schema=PATH)`` took only a saved Domain: a proposal from ``dpcore schema --out`` (its excluded
    identifier a kind the Domain refuses) raised a DomainError, and a CSV codebook was not JSON."""
    from dpcore.api import Synthesizer

    df = _survey(600)
    df.insert(0, "respondent_id", [f"R{i:05d}" for i in range(len(df))])
    path, proposal = tmp_path / "survey.csv", tmp_path / "schema.json"
    df.to_csv(path, index=False)
    assert main(["schema", str(path), "--out", str(proposal)]) == 0
    assert any(a.get("kind") == "excluded" for a in json.loads(proposal.read_text())["attributes"])
    params = {"round_iterations": 5, "max_iterations": 60, "scip": "off"}
    synth = Synthesizer(epsilon=1.0, schema=str(proposal), seed=0, workspace=tmp_path / "ws", params=params).fit(df)
    assert list(synth.sample().columns) == [c for c in df.columns if c != "respondent_id"]  # all declared, kept
    book = tmp_path / "book.csv"
    book.write_text("column,value\n" + "".join(f"q0,{v}\n" for v in ("agree", "neutral", "disagree", "no answer")))
    coded = Synthesizer(epsilon=1.0, schema=str(book), seed=0, workspace=tmp_path / "ws", params=params, force=True)
    assert set(coded.fit(df).sample()["q0"]) <= {"agree", "neutral", "disagree", "no answer"}
