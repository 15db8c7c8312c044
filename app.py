"""Streamlit entry point (minimal until the app issue lands): the bundled dataset."""

import streamlit as st

from dpcore.data import bundled_adult

st.set_page_config(page_title="dpcore — private synthetic data", layout="wide")


@st.cache_resource(show_spinner=False)
def _adult():
    return bundled_adult()


st.title("Private synthetic data")
ds = _adult()
st.write(f"Bundled sample: Adult census, n = {ds.n:,} rows, {len(ds.domain)} attributes, "
         f"domain of {ds.domain.size:,} possible records.")
st.dataframe(ds.decode().head(20))
