import io

import numpy as np
import pandas as pd
import pytest

from dpcore.data import Dataset, load_any, load_dataset, load_pgm, read_table
from dpcore.domain import infer_domain
from dpcore.errors import DataError, DomainError

from .conftest import SHARED_DATA, tiny_domain


@pytest.mark.parametrize("delim", [",", ";", "\t", "|"])
def test_csv_with_any_common_delimiter(delim):
    text = delim.join(["a", "b", "c"]) + "\n" + "\n".join(delim.join(["x", str(i), "1.5"]) for i in range(5))
    df = read_table(text.encode())
    assert list(df.columns) == ["a", "b", "c"] and len(df) == 5


def test_latin1_and_utf8_bom():
    latin = "name,city\nJosé,Zürich\nAnn,Köln\n".encode("latin-1")
    assert read_table(latin)["city"].tolist() == ["Zürich", "Köln"]
    bom = "\ufeffname,city\nA,B\n".encode("utf-8")
    assert list(read_table(bom).columns) == ["name", "city"]


def test_parquet(tmp_path):
    df = pd.DataFrame({"a": ["x", "y"], "b": [1, 2]})
    p = tmp_path / "t.parquet"
    df.to_parquet(p)
    assert read_table(p).equals(df)
    with pytest.raises(DataError, match="Parquet"):
        read_table(b"PAR1garbage", filename="t.parquet")


@pytest.mark.parametrize(
    "raw, match",
    [
        (b"", "empty"),
        (b"   \n  \n", "empty"),
        (b"a,b,c\n", "no data rows"),
        (b"onlyone\n1\n2\n", "only one column"),
        (b"a,b\n1,2,3,4\n", "more fields than the header"),
        (b"a,b\n1,2\n3,4,5\n", "could not parse|same number of fields|more fields"),
        (b"\x00\x01\x02binary", "binary"),
    ],
)
def test_bad_files_give_actionable_messages(raw, match):
    with pytest.raises(DataError, match=match):
        read_table(raw)


@pytest.mark.parametrize(
    "raw, names, renamed",
    [
        (b"a,a\n1,2\n", ["a", "a_2"], [{"original": "a", "name": "a_2"}]),
        (
            b"x,x,x,y\n1,2,3,4\n",
            ["x", "x_2", "x_3", "y"],
            [{"original": "x", "name": "x_2"}, {"original": "x", "name": "x_3"}],
        ),
        (
            b"a,,b,\n1,2,3,4\n",
            ["a", "column_2", "b", "column_4"],
            [{"original": "", "name": "column_2"}, {"original": "", "name": "column_4"}],
        ),
        # a generated name never collides with a real one
        (b"a,a,a_2\n1,2,3\n", ["a", "a_3", "a_2"], [{"original": "a", "name": "a_3"}]),
    ],
)
def test_repeated_and_empty_header_names_are_renamed_and_reported(raw, names, renamed):
    df = read_table(raw)
    assert list(df.columns) == names
    assert df.attrs["renamed"] == renamed
    assert len(df) == 1


def test_loading_never_drops_rows_by_content():
    raw = b"a,b,c\n1,x,\n,,\n?,?,?\n3,y,2020-01-01\n"
    df = read_table(raw)
    assert len(df) == 4  # a row of empty cells and a row of '?' are rows


def test_too_many_columns_is_a_clear_error():
    raw = (",".join(f"c{i}" for i in range(10_001)) + "\n" + ",".join("1" * 10_001) + "\n").encode()
    with pytest.raises(DataError, match="limit"):
        read_table(raw)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(DataError, match="not found"):
        read_table(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="folder"):
        read_table(tmp_path)


def test_question_mark_is_missing():
    df = read_table(b"a,b\n?,1\nx,2\n")
    assert df["a"].isna().tolist() == [True, False]


def test_nan_and_inf_in_numeric_columns():
    df = read_table(b"a,b\nx,1\ny,inf\nx,\n")
    dom = infer_domain(df)
    ds = load_dataset(df, dom)
    assert ds.n == 3 and dom["b"].missing


def test_load_dataset_with_inferred_domain(random_table):
    ds = load_dataset(random_table, infer_domain(random_table), "t")
    assert ds.codes.shape == (200, 3) and ds.codes.dtype == np.int64
    back = ds.decode()
    assert back["color"].tolist() == random_table["color"].tolist()


def test_dataset_validates_codes():
    with pytest.raises(DomainError, match="outside"):
        Dataset(np.array([[0, 5, 0, 0]]), tiny_domain())
    with pytest.raises(DataError, match="no rows"):
        Dataset(np.zeros((0, 4), int), tiny_domain())


def test_fingerprint_depends_on_data_and_schema():
    d1 = Dataset(np.zeros((3, 4), int), tiny_domain())
    d2 = Dataset(np.ones((3, 4), int), tiny_domain())
    assert d1.fingerprint != d2.fingerprint and len(d1.fingerprint) == 16


def test_adult_pgm_with_domain_json():
    ds = load_pgm(SHARED_DATA / "adult_pgm.csv")
    assert ds.n == 48842 and ds.domain.one_hot_size == 588 and len(ds.domain) == 14
    same = load_any(SHARED_DATA / "adult_pgm.csv", SHARED_DATA / "adult_pgm-domain.json")
    assert np.array_equal(same.codes, ds.codes)


def test_pgm_codes_out_of_range(tmp_path):
    (tmp_path / "t.csv").write_text("a,b\n0,1\n5,0\n")
    (tmp_path / "t-domain.json").write_text('{"a": 2, "b": 2}')
    with pytest.raises(DataError, match="outside"):
        load_pgm(tmp_path / "t.csv")


def test_load_any_infers_without_schema(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b\nx,1\ny,2\n")
    ds = load_any(p)
    assert ds.domain.inferred == ["a", "b"]
    assert all(a.source == "inferred" for a in ds.domain.attributes)


def test_source_id_is_the_file_digest(tmp_path):
    import hashlib

    raw = b"a,a\n1,2\n3,4\n"
    df = read_table(raw)
    assert df.attrs["source_digest"] == hashlib.sha256(raw).hexdigest()


def test_file_object_upload():
    buf = io.BytesIO(b"a,b\n1,x\n2,y\n")
    buf.name = "up.csv"
    assert len(read_table(buf)) == 2


@pytest.mark.parametrize("encoding, sep", [("utf-16", "\t"), ("utf-16", ","), ("utf-32", ";")])
def test_unicode_text_with_a_byte_order_mark_reads_like_utf8(encoding, sep):
    """Excel's "Unicode Text" export is UTF-16 with a BOM, tab-separated: read as any CSV (accents kept)."""
    df = pd.DataFrame({"name": ["Zoë", "José", "Łukasz"] * 4, "v": [1, 2, 3] * 4})
    raw = df.to_csv(index=False, sep=sep).encode(encoding)
    assert raw[:2] in (b"\xff\xfe", b"\xfe\xff")
    back = read_table(raw, filename="export.txt")
    assert list(back.columns) == ["name", "v"] and back["name"].tolist() == df["name"].tolist()
    assert back["v"].tolist() == df["v"].astype(str).tolist()  # cells are read as text, each on its own


def test_a_space_separated_export_is_read_as_a_table():
    """Statistics packages write .dat/.txt tables separated by runs of spaces, names often quoted (statsmodels'
    spector: ``'OBS' 'GPA' 'TUCE'``): read with its columns, not refused as one column."""
    raw = b"'OBS' 'GPA' \"TUCE\" PSI\n1 2.66 20 0\n2  2.89 22 0\n 3 3.28   24 1\n"
    df = read_table(raw)
    assert list(df.columns) == ["OBS", "GPA", "TUCE", "PSI"]
    assert df.values.tolist() == [["1", "2.66", "20", "0"], ["2", "2.89", "22", "0"], ["3", "3.28", "24", "1"]]
    # Spaces inside fields of a comma file do not make it space-separated ...
    df = read_table(b"name,city\nAnn Lee,New York\nBo,Paris\n")
    assert list(df.columns) == ["name", "city"] and df["city"].tolist() == ["New York", "Paris"]
    # ... and lines that split into different numbers of fields stay one column of text (refused, said why).
    with pytest.raises(DataError, match="only one column found.*runs of spaces"):
        read_table(b"note\nhello world\nfoo bar baz\n")


@pytest.mark.parametrize(
    "raw",
    [
        '\ufeff\r\n\r\nname;city\r\nZoë;Besançon\r\nAnn;"Paris\nnord"\r\n'.encode("utf-8"),  # BOM, blank lines, CRLF
        '\r\nname;city\r\nZoë;Besançon\r\nAnn;"Paris\nnord"\r\n'.encode("cp1252"),  # Windows-1252
    ],
)
def test_the_parser_reads_the_bytes_in_the_encoding_that_decoded_them(raw):
    """The parser reads the file's bytes in the encoding found (no decoded copy: a 500 MB CSV peaked at 5.7 GB,
    now 2.6 GB): leading blank lines, a byte-order mark, CRLF and a quoted line break come through as before."""
    df = read_table(raw)
    assert list(df.columns) == ["name", "city"]
    assert df["name"].tolist() == ["Zoë", "Ann"] and df["city"].tolist() == ["Besançon", "Paris\nnord"]


def test_a_header_whose_every_name_is_in_single_quotes_loses_the_quotes():
    """statsmodels' anes96: tab-separated, every name quoted 'popul'; a header quoting only some keeps them."""
    df = read_table(b"'popul'\t'TVnews'\t'vote'\n0\t7\t1\n190\t1\t0\n")
    assert list(df.columns) == ["popul", "TVnews", "vote"] and df["vote"].tolist() == ["1", "0"]
    assert list(read_table(b"'a',b\n1,2\n3,4\n").columns) == ["'a'", "b"]


@pytest.mark.parametrize("bad", ["1.5", "a", "", " 2x"])
def test_a_coded_table_with_a_cell_that_is_not_an_integer_code_is_refused(tmp_path, bad):
    (tmp_path / "t.csv").write_text("a,b\n0,1\n1,0\n" + f"1,{bad}\n" + " 2 ,1\n")
    (tmp_path / "t-domain.json").write_text('{"a": 3, "b": 2}')
    with pytest.raises(DataError, match="only integer codes"):
        load_pgm(tmp_path / "t.csv")
    (tmp_path / "t.csv").write_text("a,b\n0,1\n1,0\n 2 ,1\n")
    assert load_pgm(tmp_path / "t.csv").codes[:, 0].tolist() == [0, 1, 2]
