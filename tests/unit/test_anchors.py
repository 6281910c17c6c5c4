"""The anchor a row has in report.html: valid as an HTML id and a fragment, never shared."""

import re

from flipgate.output.anchors import row_anchor


def test_a_plain_id_reads_as_itself():
    assert row_anchor(None, "refund-12") == "case-refund-12"
    assert row_anchor("", "refund-12") == "case-refund-12"


def test_a_suite_comes_first_with_a_separator_no_id_can_hold():
    assert row_anchor("pricing", "refund-12") == "case-pricing~refund-12"


def test_hostile_ids_become_inert_fragments():
    for case_id in ['"><script>alert(1)</script>', "a b", "é", "#x", "a%2Fb", "\u200b", "a~b", "a_b"]:
        anchor = row_anchor(None, case_id)
        assert re.fullmatch(r"case-[A-Za-z0-9._~\-]+", anchor), anchor


def test_no_two_rows_share_an_anchor():
    pairs = [(None, "a~b"), ("a", "b"), (None, "a_7e_b"), (None, "a_b"), ("a-b", "c"), ("a", "b-c"),
             (None, "x y"), (None, "x_20_y")]
    anchors = [row_anchor(suite, case_id) for suite, case_id in pairs]
    assert len(set(anchors)) == len(anchors)
