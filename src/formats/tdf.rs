//! TDF / OTA text files (stub: the reader lands here).
