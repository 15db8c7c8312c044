"""Page-shared logic of the Streamlit app (the engine, ``dpcore``, never imports this).

Pages under ``pages/`` hold layout only; what they share lives here:
``state`` (session keys and defaults), ``datasource`` (bundled sample, uploads and the
schema table), ``widgets`` (mechanism parameters from their declared list),
``jobs`` (runs owned by the server process, recorded in the workspace), ``progress``
(watching them: live progress, cancel, how they ended), ``results``, ``charts``
(altair figures), ``sidebar`` and ``text`` (safe rendering of user strings).
"""
