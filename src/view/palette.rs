//! Palette resolution per asset in a game folder (stub).
