//! Harness functions for the fuzz targets and the corpus replay tests. Not a public API: the
//! fuzz crate and `tests/` call these so that every target's checks live in the library.
