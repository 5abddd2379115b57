//! 3DO models (`objects3d/*.3do`): a tree of 52-byte object headers (first child / next
//! sibling offsets, root at offset 0), each with its vertices (three i32, 16.16 fixed point),
//! its 32-byte primitives (colour index, vertex-index list, texture name) and its name.
//!
//! The reader walks the tree without recursion, refuses an object reached twice (cyclic or
//! shared offsets) and bounds depth, object count, vertices, primitives and index lists by
//! [`ModelLimits`]. Arrays and names several primitives or pieces share are expanded once
//! per use, so what is budgeted is the expanded size ([`ModelLimits::max_expanded_bytes`],
//! [`measure`]), checked before anything is allocated.

use super::bytes::{Bytes, OutOfBounds};

/// Length of an object header.
pub const OBJECT_LEN: u64 = 52;
/// Length of a primitive.
pub const PRIMITIVE_LEN: u64 = 32;
/// Fixed-point scale of offsets and vertices (16.16).
pub const FIXED_ONE: f64 = 65536.0;

/// Budgets applied while reading a 3DO. The defaults are far above stock models (at most ~80
/// pieces and ~1,000 vertices) and far below what would exhaust memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLimits {
    /// Objects (pieces) in one file.
    pub max_objects: usize,
    /// Depth of the piece tree (the root is depth 0).
    pub max_depth: usize,
    /// Vertices summed over all pieces.
    pub max_vertices: usize,
    /// Primitives summed over all pieces.
    pub max_primitives: usize,
    /// Vertex indices of one primitive.
    pub max_primitive_indices: usize,
    /// Bytes of one name (piece or texture), without the NUL.
    pub max_name_len: usize,
    /// Bytes of the model as expanded and of its OBJ text ([`expanded_cost`]): vertices,
    /// primitives, vertex indices and names, each counted every time it is used (a list
    /// shared by many pieces counts once per piece).
    pub max_expanded_bytes: u64,
}

/// Bytes one vertex costs once expanded: three i32 plus its OBJ line.
pub const VERTEX_COST: u64 = 12 + 64;
/// Bytes one primitive costs once expanded: the decoded struct plus its OBJ line overhead
/// (`f`, `usemtl`, newline).
pub const PRIMITIVE_COST: u64 = std::mem::size_of::<Primitive>() as u64 + 48;
/// Bytes one vertex index costs once expanded: a u16 plus its OBJ text (` 1048576/4`).
pub const INDEX_COST: u64 = 2 + 16;

/// What a model holds once expanded, summed over every use: [`measure`] counts it from the
/// headers alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Pieces.
    pub objects: u64,
    /// Vertices.
    pub vertices: u64,
    /// Primitives.
    pub primitives: u64,
    /// Vertex indices of all primitives.
    pub indices: u64,
    /// Bytes of piece and texture names.
    pub name_bytes: u64,
}

impl Counts {
    /// Upper bound of the bytes the decoded model and its OBJ/MTL/CSV text take.
    pub fn expanded_bytes(&self) -> u64 {
        self.objects
            .saturating_mul(std::mem::size_of::<Piece>() as u64 + 128)
            .saturating_add(self.vertices.saturating_mul(VERTEX_COST))
            .saturating_add(self.primitives.saturating_mul(PRIMITIVE_COST))
            .saturating_add(self.indices.saturating_mul(INDEX_COST))
            .saturating_add(self.name_bytes.saturating_mul(3))
    }
}

/// [`Counts::expanded_bytes`] of a model already decoded.
pub fn expanded_cost(model: &Model) -> u64 {
    let mut c = Counts {
        objects: model.pieces.len() as u64,
        ..Counts::default()
    };
    for p in &model.pieces {
        c.vertices += p.vertices.len() as u64;
        c.primitives += p.primitives.len() as u64;
        c.name_bytes += p.name.len() as u64;
        for q in &p.primitives {
            c.indices += q.indices.len() as u64;
            c.name_bytes += q.texture.as_ref().map_or(0, |t| t.len() as u64);
        }
    }
    c.expanded_bytes()
}

impl Default for ModelLimits {
    fn default() -> Self {
        ModelLimits {
            max_objects: 4096,
            max_depth: 64,
            max_vertices: 1 << 20,
            max_primitives: 1 << 20,
            max_primitive_indices: 1024,
            max_name_len: 256,
            max_expanded_bytes: 96 << 20,
        }
    }
}

/// Why a 3DO could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum O3doError {
    /// A structure reaches past the end of the file.
    #[error("3do: {structure} at offset {offset:#x}: {len} bytes needed, file has {file_len}")]
    Truncated {
        /// What was being read.
        structure: String,
        /// Its offset.
        offset: u64,
        /// Bytes it needs.
        len: u64,
        /// File length.
        file_len: u64,
    },
    /// A structure holds an impossible value.
    #[error("3do: {structure} at offset {offset:#x}: {message}")]
    Malformed {
        /// What was being read.
        structure: String,
        /// Its offset.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A budget of [`ModelLimits`] was exceeded.
    #[error("3do: {structure} at offset {offset:#x}: over the limit: {message}")]
    Limit {
        /// What was being read.
        structure: String,
        /// Its offset.
        offset: u64,
        /// Which budget.
        message: String,
    },
}

/// One face (or line, or point) of a piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Primitive {
    /// File offset of the primitive.
    pub offset: u32,
    /// Palette index of a solid-coloured primitive.
    pub color: i32,
    /// Indices into the piece's own vertices, in the order the texture corners follow.
    pub indices: Vec<u16>,
    /// Texture (a sequence name of `textures/*.gaf`, any case), if any.
    pub texture: Option<String>,
    /// The is-coloured flag: drawn in `color` when there is no texture.
    pub is_colored: bool,
    /// The index array's offset as read (kept for an in-place rewrite).
    pub index_offset: i32,
    /// The texture name's offset as read, 0 for none.
    pub texture_offset: i32,
    /// Words 2, 5 and 6, of unknown use (often left-over memory), kept as read.
    pub unknown: [i32; 3],
    /// Word 7 as read: its truth is [`Primitive::is_colored`], its value is kept.
    pub colored_word: i32,
}

impl Primitive {
    /// Drawn at all: textured or solid-coloured (neither = collision-only, invisible).
    pub fn visible(&self) -> bool {
        self.texture.is_some() || self.is_colored
    }
}

/// One piece (object) of the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// File offset of the object header.
    pub offset: u32,
    /// Name (NUL-terminated in the file; read as Latin-1).
    pub name: String,
    /// Index of the parent piece in [`Model::pieces`].
    pub parent: Option<usize>,
    /// 0 for the root.
    pub depth: usize,
    /// Index of the selection primitive (meaningful on the root; −1 elsewhere).
    pub selection_primitive: i32,
    /// Offset from the parent piece, 16.16 fixed point.
    pub origin: [i32; 3],
    /// Vertices in the piece's own frame, 16.16 fixed point.
    pub vertices: Vec<[i32; 3]>,
    /// Primitives.
    pub primitives: Vec<Primitive>,
    /// The name's offset as read.
    pub name_offset: i32,
    /// Word 8 of the header, of unknown use, kept as read.
    pub unknown: i32,
    /// The vertex array's offset as read.
    pub vertex_offset: i32,
    /// The primitive array's offset as read.
    pub primitive_offset: i32,
}

/// A decoded model: pieces in depth-first pre-order (a piece, its children, then its next
/// sibling), the root first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// The pieces.
    pub pieces: Vec<Piece>,
}

impl Model {
    /// Every texture name, in first-use order, without repeats (compared ignoring case).
    pub fn textures(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.pieces {
            for t in p.primitives.iter().filter_map(|q| q.texture.as_ref()) {
                if !out.iter().any(|o| o.eq_ignore_ascii_case(t)) {
                    out.push(t.clone());
                }
            }
        }
        out
    }

    /// The piece's origin in model space: its offset summed along its ancestors (fixed
    /// point, widened so no sum overflows).
    pub fn world_origin(&self, piece: usize) -> [i64; 3] {
        let mut acc = [0i64; 3];
        let mut cur = Some(piece);
        // Parents precede children, so the walk ends; the bound guards models built by code.
        for _ in 0..=self.pieces.len() {
            let Some(i) = cur else { break };
            let Some(p) = self.pieces.get(i) else { break };
            for (a, o) in acc.iter_mut().zip(p.origin) {
                *a += i64::from(o);
            }
            cur = p.parent.filter(|&q| q < i);
        }
        acc
    }
}

fn oob(structure: impl Into<String>, e: OutOfBounds) -> O3doError {
    O3doError::Truncated {
        structure: structure.into(),
        offset: e.offset,
        len: e.len,
        file_len: e.input_len,
    }
}

fn malformed(structure: impl Into<String>, offset: u64, message: impl Into<String>) -> O3doError {
    O3doError::Malformed {
        structure: structure.into(),
        offset,
        message: message.into(),
    }
}

fn limit(structure: impl Into<String>, offset: u64, message: impl Into<String>) -> O3doError {
    O3doError::Limit {
        structure: structure.into(),
        offset,
        message: message.into(),
    }
}

fn i32_at(b: &Bytes, offset: u64, structure: &str) -> Result<i32, O3doError> {
    b.u32(offset)
        .map(|v| v as i32)
        .map_err(|e| oob(structure, e))
}

/// A file offset field: non-negative.
fn offset_field(v: i32, at: u64, structure: &str, field: &str) -> Result<u64, O3doError> {
    u64::try_from(v)
        .map_err(|_| malformed(structure, at, format!("{field} offset {v} is negative")))
}

fn name_at(b: &Bytes, offset: u64, max: usize, structure: &str) -> Result<String, O3doError> {
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    let rest = b
        .data()
        .get(start..)
        .filter(|_| offset < b.len() as u64)
        .ok_or_else(|| {
            oob(
                structure,
                OutOfBounds {
                    offset,
                    len: 1,
                    input_len: b.len() as u64,
                },
            )
        })?;
    let window = &rest[..rest.len().min(max + 1)];
    let end = window.iter().position(|&c| c == 0).ok_or_else(|| {
        if rest.len() <= max {
            malformed(structure, offset, "no NUL before the end of the file")
        } else {
            limit(structure, offset, format!("longer than {max} bytes"))
        }
    })?;
    Ok(window[..end].iter().map(|&c| char::from(c)).collect())
}

/// Reads a 3DO.
pub fn parse(data: &[u8], limits: &ModelLimits) -> Result<Model, O3doError> {
    walk(data, limits, true).map(|(m, _)| m)
}

/// What parsing `data` would expand to, from its headers, without decoding vertices,
/// indices or names (the budget of a decode is taken from it). Errors as [`parse`].
pub fn measure(data: &[u8], limits: &ModelLimits) -> Result<Counts, O3doError> {
    walk(data, limits, false).map(|(_, c)| c)
}

/// Refuses the model when what it expands to so far is over the budget.
fn check_expanded(c: &Counts, limits: &ModelLimits, what: &str, at: u64) -> Result<(), O3doError> {
    let n = c.expanded_bytes();
    if n > limits.max_expanded_bytes {
        return Err(limit(
            what,
            at,
            format!(
                "more than {} bytes once expanded ({} vertices, {} primitives, {} indices so far)",
                limits.max_expanded_bytes, c.vertices, c.primitives, c.indices
            ),
        ));
    }
    Ok(())
}

/// The reader; `keep` false only counts (nothing is decoded into vectors).
fn walk(data: &[u8], limits: &ModelLimits, keep: bool) -> Result<(Model, Counts), O3doError> {
    let b = Bytes::new(data);
    let mut pieces: Vec<Piece> = Vec::new();
    let mut counts = Counts::default();
    let mut visited = std::collections::HashSet::new();
    let (mut total_v, mut total_p) = (0usize, 0usize);
    // (header offset, parent, depth)
    let mut stack: Vec<(u64, Option<usize>, usize)> = vec![(0, None, 0)];
    let mut me = 0usize;
    while let Some((at, parent, depth)) = stack.pop() {
        let what = format!("object header #{me}");
        if !visited.insert(at) {
            return Err(malformed(
                what,
                at,
                "reached twice through sibling/child offsets (a cycle or shared object)",
            ));
        }
        if me >= limits.max_objects {
            return Err(limit(
                what,
                at,
                format!("more than {} objects", limits.max_objects),
            ));
        }
        if depth > limits.max_depth {
            return Err(limit(
                what,
                at,
                format!("tree deeper than {}", limits.max_depth),
            ));
        }
        let h = b.slice(at, OBJECT_LEN).map_err(|e| oob(what.clone(), e))?;
        let hb = Bytes::new(h);
        let f = |k: u64| i32_at(&hb, k * 4, &what);
        let (version, nv, np, sel) = (f(0)?, f(1)?, f(2)?, f(3)?);
        let origin = [f(4)?, f(5)?, f(6)?];
        let (name_off, unknown, vert_off, prim_off, sib_off, child_off) =
            (f(7)?, f(8)?, f(9)?, f(10)?, f(11)?, f(12)?);
        if version != 1 {
            return Err(malformed(
                what,
                at,
                format!("version {version}, expected 1"),
            ));
        }
        let nv = usize::try_from(nv)
            .map_err(|_| malformed(&what, at + 4, format!("vertex count {nv} is negative")))?;
        let np = usize::try_from(np)
            .map_err(|_| malformed(&what, at + 8, format!("primitive count {np} is negative")))?;
        total_v = total_v.saturating_add(nv);
        total_p = total_p.saturating_add(np);
        if total_v > limits.max_vertices {
            return Err(limit(
                what,
                at + 4,
                format!("more than {} vertices", limits.max_vertices),
            ));
        }
        if total_p > limits.max_primitives {
            return Err(limit(
                what,
                at + 8,
                format!("more than {} primitives", limits.max_primitives),
            ));
        }
        counts.objects += 1;
        counts.vertices += nv as u64;
        counts.primitives += np as u64;
        check_expanded(&counts, limits, &what, at)?;
        let name_at_ = offset_field(name_off, at + 28, &what, "name")?;
        let name = name_at(
            &b,
            name_at_,
            limits.max_name_len,
            &format!("name of {what}"),
        )?;
        counts.name_bytes += name.len() as u64;
        let vo = offset_field(vert_off, at + 36, &what, "vertex array")?;
        let varr = b
            .slice(vo, nv as u64 * 12)
            .map_err(|e| oob(format!("vertex array of {name:?}"), e))?;
        let vertices: Vec<[i32; 3]> = if keep {
            varr.chunks_exact(12)
                .map(|c| {
                    let w = |k: usize| i32::from_le_bytes([c[k], c[k + 1], c[k + 2], c[k + 3]]);
                    [w(0), w(4), w(8)]
                })
                .collect()
        } else {
            Vec::new()
        };
        let po = offset_field(prim_off, at + 40, &what, "primitive array")?;
        b.slice(po, np as u64 * PRIMITIVE_LEN)
            .map_err(|e| oob(format!("primitive array of {name:?}"), e))?;
        let mut primitives = Vec::with_capacity(if keep { np } else { 0 });
        for k in 0..np as u64 {
            let pat = po + k * PRIMITIVE_LEN;
            let pwhat = format!("primitive #{k} of {name:?}");
            let g = |j: u64| i32_at(&b, pat + j * 4, &pwhat);
            let (color, n, idx_off, tex_off, colored) = (g(0)?, g(1)?, g(3)?, g(4)?, g(7)?);
            let unknown = [g(2)?, g(5)?, g(6)?];
            let n = usize::try_from(n)
                .map_err(|_| malformed(&pwhat, pat + 4, format!("index count {n} is negative")))?;
            if n > limits.max_primitive_indices {
                return Err(limit(&pwhat, pat + 4, format!("{n} vertex indices")));
            }
            counts.indices += n as u64;
            check_expanded(&counts, limits, &pwhat, pat + 4)?;
            let io = offset_field(idx_off, pat + 12, &pwhat, "index array")?;
            let raw = b
                .slice(io, n as u64 * 2)
                .map_err(|e| oob(format!("index array of {pwhat}"), e))?;
            let idx = raw
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]));
            if let Some(bad) = idx.clone().find(|&i| usize::from(i) >= nv) {
                return Err(malformed(
                    &pwhat,
                    io,
                    format!("vertex index {bad}, the piece has {nv} vertices"),
                ));
            }
            let texture = if tex_off == 0 {
                None
            } else {
                let to = offset_field(tex_off, pat + 16, &pwhat, "texture name")?;
                Some(name_at(
                    &b,
                    to,
                    limits.max_name_len,
                    &format!("texture name of {pwhat}"),
                )?)
                .filter(|t| !t.is_empty())
            };
            counts.name_bytes += texture.as_ref().map_or(0, |t| t.len() as u64);
            check_expanded(&counts, limits, &pwhat, pat + 16)?;
            if keep {
                primitives.push(Primitive {
                    offset: pat as u32,
                    color,
                    indices: idx.collect(),
                    texture,
                    is_colored: colored != 0,
                    index_offset: idx_off,
                    texture_offset: tex_off,
                    unknown,
                    colored_word: colored,
                });
            }
        }
        if keep {
            pieces.push(Piece {
                offset: at as u32,
                name,
                parent,
                depth,
                selection_primitive: sel,
                origin,
                vertices,
                primitives,
                name_offset: name_off,
                unknown,
                vertex_offset: vert_off,
                primitive_offset: prim_off,
            });
        }
        if sib_off != 0 {
            if parent.is_none() {
                return Err(malformed(&what, at + 44, "the root object has a sibling"));
            }
            stack.push((
                offset_field(sib_off, at + 44, &what, "sibling")?,
                parent,
                depth,
            ));
        }
        if child_off != 0 {
            stack.push((
                offset_field(child_off, at + 48, &what, "child")?,
                Some(me),
                depth + 1,
            ));
        }
        me += 1;
    }
    Ok((Model { pieces }, counts))
}

/// Writes `model` as a 3DO. With `base`, the file the model was read from, an edit that
/// keeps every structure's size (moved vertices and pieces, recoloured or re-indexed faces,
/// a texture or name of the same length) is written into a copy of `base` at the offsets the
/// model recorded, so the unedited model gives back `base` byte for byte and an edit changes
/// only the words it touches; the copy is read back and must give the model. Anything else
/// (pieces or faces added or removed, longer names, a changed tree) gets a fresh layout:
/// every piece's header, name, vertices, primitives, index lists, then the texture names,
/// each once; unknown words are kept.
pub fn write(model: &Model, base: Option<&[u8]>) -> Result<Vec<u8>, O3doError> {
    check_tree(model)?;
    if let Some(base) = base {
        if let Some(out) = write_over(model, base) {
            return Ok(out);
        }
    }
    write_fresh(model)
}

/// Refuses a model whose parents do not form one pre-ordered tree rooted at piece 0.
fn check_tree(model: &Model) -> Result<(), O3doError> {
    let bad = |i: usize, m: &str| malformed(format!("piece #{i}"), 0, m.to_string());
    if model.pieces.is_empty() {
        return Err(bad(0, "a model needs a root piece"));
    }
    for (i, p) in model.pieces.iter().enumerate() {
        match (i, p.parent) {
            (0, None) => {}
            (0, Some(_)) => return Err(bad(0, "the root has a parent")),
            (_, None) => return Err(bad(i, "a second root")),
            (_, Some(q)) if q >= i => return Err(bad(i, "its parent does not precede it")),
            _ => {}
        }
        if p.vertices.len() > usize::from(u16::MAX) + 1 {
            return Err(bad(i, "more than 65,536 vertices"));
        }
        for q in &p.primitives {
            if let Some(v) = q
                .indices
                .iter()
                .find(|&&v| usize::from(v) >= p.vertices.len())
            {
                return Err(bad(i, &format!("vertex index {v} past its vertices")));
            }
        }
    }
    Ok(())
}

/// First child and next sibling of every piece (indices), from the parents.
fn links(model: &Model) -> (Vec<Option<usize>>, Vec<Option<usize>>) {
    let n = model.pieces.len();
    let (mut child, mut sibling) = (vec![None; n], vec![None; n]);
    let mut last: Vec<Option<usize>> = vec![None; n];
    for (i, p) in model.pieces.iter().enumerate() {
        let Some(q) = p.parent else { continue };
        match last[q] {
            None => child[q] = Some(i),
            Some(prev) => sibling[prev] = Some(i),
        }
        last[q] = Some(i);
    }
    (child, sibling)
}

fn put_i32(out: &mut [u8], at: usize, v: i32) -> Option<()> {
    out.get_mut(at..at.checked_add(4)?)?
        .copy_from_slice(&v.to_le_bytes());
    Some(())
}

fn put_bytes(out: &mut [u8], at: usize, b: &[u8]) -> Option<()> {
    out.get_mut(at..at.checked_add(b.len())?)?
        .copy_from_slice(b);
    Some(())
}

/// Latin-1 bytes of a name read as Latin-1; `None` for characters past U+00FF.
fn latin1(s: &str) -> Option<Vec<u8>> {
    s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect()
}

/// Word 7 of a primitive: the value read when its truth still matches.
fn colored_word(q: &Primitive) -> i32 {
    if (q.colored_word != 0) == q.is_colored {
        q.colored_word
    } else {
        i32::from(q.is_colored)
    }
}

/// The in-place rewrite of [`write`]; `None` when the model does not fit `base`'s layout.
fn write_over(model: &Model, base: &[u8]) -> Option<Vec<u8>> {
    let limits = ModelLimits::default();
    let old = parse(base, &limits).ok()?;
    let fits = old.pieces.len() == model.pieces.len()
        && old.pieces.iter().zip(&model.pieces).all(|(a, b)| {
            a.offset == b.offset
                && a.parent == b.parent
                && a.vertices.len() == b.vertices.len()
                && a.primitives.len() == b.primitives.len()
                && a.vertex_offset == b.vertex_offset
                && a.primitive_offset == b.primitive_offset
                && a.primitives.iter().zip(&b.primitives).all(|(x, y)| {
                    x.offset == y.offset
                        && x.indices.len() == y.indices.len()
                        && x.index_offset == y.index_offset
                        && x.texture_offset == y.texture_offset
                })
        });
    if !fits {
        return None;
    }
    let mut out = base.to_vec();
    let (child, sibling) = links(model);
    let off = |i: Option<usize>| i.map_or(0, |i| model.pieces[i].offset as i32);
    for (i, p) in model.pieces.iter().enumerate() {
        let h = p.offset as usize;
        let words = [
            1,
            p.vertices.len() as i32,
            p.primitives.len() as i32,
            p.selection_primitive,
            p.origin[0],
            p.origin[1],
            p.origin[2],
            p.name_offset,
            p.unknown,
            p.vertex_offset,
            p.primitive_offset,
            off(sibling[i]),
            off(child[i]),
        ];
        for (k, w) in words.iter().enumerate() {
            put_i32(&mut out, h + 4 * k, *w)?;
        }
        let mut name = latin1(&p.name)?;
        name.push(0);
        put_bytes(&mut out, usize::try_from(p.name_offset).ok()?, &name)?;
        let vo = usize::try_from(p.vertex_offset).ok()?;
        for (k, v) in p.vertices.iter().enumerate() {
            for (j, c) in v.iter().enumerate() {
                put_i32(&mut out, vo + 12 * k + 4 * j, *c)?;
            }
        }
        for q in &p.primitives {
            let at = q.offset as usize;
            let words = [
                q.color,
                q.indices.len() as i32,
                q.unknown[0],
                q.index_offset,
                q.texture_offset,
                q.unknown[1],
                q.unknown[2],
                colored_word(q),
            ];
            for (k, w) in words.iter().enumerate() {
                put_i32(&mut out, at + 4 * k, *w)?;
            }
            let io = usize::try_from(q.index_offset).ok()?;
            for (k, v) in q.indices.iter().enumerate() {
                put_bytes(&mut out, io + 2 * k, &v.to_le_bytes())?;
            }
            if let Some(t) = &q.texture {
                let mut t = latin1(t)?;
                t.push(0);
                put_bytes(&mut out, usize::try_from(q.texture_offset).ok()?, &t)?;
            }
        }
    }
    // shared or overlapping structures an edit wrote over show here
    (parse(&out, &limits).ok()? == *model).then_some(out)
}

/// The fresh layout of [`write`].
fn write_fresh(model: &Model) -> Result<Vec<u8>, O3doError> {
    let too_big = || limit("model", 0, "larger than a 3DO's 2 GiB offsets");
    let pos = |out: &Vec<u8>| i32::try_from(out.len()).map_err(|_| too_big());
    let n = model.pieces.len();
    let mut out = Vec::new();
    let mut headers = vec![0usize; n];
    let mut names: Vec<(Vec<u8>, i32)> = Vec::new();
    // texture-name slots to fill once the names are placed: (primitive word offset, name)
    let mut tex_slots: Vec<(usize, Vec<u8>)> = Vec::new();
    for (i, p) in model.pieces.iter().enumerate() {
        headers[i] = out.len();
        out.resize(out.len() + OBJECT_LEN as usize, 0);
        let name_at = pos(&out)?;
        let mut name = latin1(&p.name)
            .ok_or_else(|| malformed(format!("name of piece #{i}"), 0, "not Latin-1"))?;
        name.push(0);
        out.extend_from_slice(&name);
        let vert_at = pos(&out)?;
        for v in &p.vertices {
            for c in v {
                out.extend_from_slice(&c.to_le_bytes());
            }
        }
        let prim_at = pos(&out)?;
        out.resize(out.len() + p.primitives.len() * PRIMITIVE_LEN as usize, 0);
        for (k, q) in p.primitives.iter().enumerate() {
            let idx_at = pos(&out)?;
            for v in &q.indices {
                out.extend_from_slice(&v.to_le_bytes());
            }
            let at = prim_at as usize + k * PRIMITIVE_LEN as usize;
            let words = [
                q.color,
                q.indices.len() as i32,
                q.unknown[0],
                idx_at,
                0,
                q.unknown[1],
                q.unknown[2],
                colored_word(q),
            ];
            for (j, w) in words.iter().enumerate() {
                put_i32(&mut out, at + 4 * j, *w).ok_or_else(too_big)?;
            }
            if let Some(t) = &q.texture {
                let t = latin1(t)
                    .ok_or_else(|| malformed(format!("texture of piece #{i}"), 0, "not Latin-1"))?;
                tex_slots.push((at + 16, t));
            }
        }
        let words = [
            1,
            p.vertices.len() as i32,
            p.primitives.len() as i32,
            p.selection_primitive,
            p.origin[0],
            p.origin[1],
            p.origin[2],
            name_at,
            p.unknown,
            vert_at,
            prim_at,
        ];
        for (k, w) in words.iter().enumerate() {
            put_i32(&mut out, headers[i] + 4 * k, *w).ok_or_else(too_big)?;
        }
    }
    for (slot, t) in tex_slots {
        let at = match names.iter().find(|(n, _)| *n == t) {
            Some((_, at)) => *at,
            None => {
                let at = pos(&out)?;
                out.extend_from_slice(&t);
                out.push(0);
                names.push((t, at));
                at
            }
        };
        put_i32(&mut out, slot, at).ok_or_else(too_big)?;
    }
    let (child, sibling) = links(model);
    for i in 0..n {
        let off = |j: Option<usize>| j.map_or(Ok(0), |j| i32::try_from(headers[j]));
        let (s, c) = (off(sibling[i]), off(child[i]));
        put_i32(&mut out, headers[i] + 44, s.map_err(|_| too_big())?).ok_or_else(too_big)?;
        put_i32(&mut out, headers[i] + 48, c.map_err(|_| too_big())?).ok_or_else(too_big)?;
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A primitive of [`build`]: indices, texture, coloured.
    pub(crate) type TestPrimitive = (Vec<u16>, Option<&'static str>, bool);
    /// A piece of [`build`]: name, origin, vertices, primitives.
    pub(crate) type TestPiece = (&'static str, [i32; 3], Vec<[i32; 3]>, Vec<TestPrimitive>);

    /// Builds a 3DO from pieces given as (name, origin, vertices, primitives as (indices,
    /// texture, coloured)), with `children[i]` listing the child pieces of piece `i`.
    pub(crate) fn build(pieces: &[TestPiece], children: &[Vec<usize>]) -> Vec<u8> {
        let n = pieces.len();
        let mut out = vec![0u8; n * OBJECT_LEN as usize];
        let put = |out: &mut Vec<u8>, at: usize, v: i32| {
            out[at..at + 4].copy_from_slice(&v.to_le_bytes());
        };
        let mut next_sibling = vec![0i32; n];
        let mut first_child = vec![0i32; n];
        for (p, kids) in children.iter().enumerate() {
            for (k, &c) in kids.iter().enumerate() {
                if k == 0 {
                    first_child[p] = (c * OBJECT_LEN as usize) as i32;
                }
                if let Some(&nx) = kids.get(k + 1) {
                    next_sibling[c] = (nx * OBJECT_LEN as usize) as i32;
                }
            }
        }
        for (i, (name, origin, verts, prims)) in pieces.iter().enumerate() {
            let h = i * OBJECT_LEN as usize;
            let name_at = out.len();
            out.extend_from_slice(name.as_bytes());
            out.push(0);
            let vert_at = out.len();
            for v in verts {
                for c in v {
                    out.extend_from_slice(&c.to_le_bytes());
                }
            }
            let mut idx_at = Vec::new();
            let mut tex_at = Vec::new();
            for (idx, tex, _) in prims {
                idx_at.push(out.len());
                for i in idx {
                    out.extend_from_slice(&i.to_le_bytes());
                }
                tex_at.push(tex.map(|t| {
                    let a = out.len();
                    out.extend_from_slice(t.as_bytes());
                    out.push(0);
                    a
                }));
            }
            let prim_at = out.len();
            for (k, (idx, _, colored)) in prims.iter().enumerate() {
                let mut p = [0i32; 8];
                p[0] = k as i32 + 1;
                p[1] = idx.len() as i32;
                p[3] = idx_at[k] as i32;
                p[4] = tex_at[k].unwrap_or(0) as i32;
                p[7] = i32::from(*colored);
                for w in p {
                    out.extend_from_slice(&w.to_le_bytes());
                }
            }
            let words = [
                1,
                verts.len() as i32,
                prims.len() as i32,
                if i == 0 { 0 } else { -1 },
                origin[0],
                origin[1],
                origin[2],
                name_at as i32,
                0,
                vert_at as i32,
                prim_at as i32,
                next_sibling[i],
                first_child[i],
            ];
            for (k, w) in words.iter().enumerate() {
                put(&mut out, h + k * 4, *w);
            }
        }
        out
    }

    pub(crate) fn cube_tree() -> Vec<u8> {
        let quad = |t: Option<&'static str>| (vec![0u16, 1, 2, 3], t, t.is_none());
        let sq = vec![[0, 0, 0], [65536, 0, 0], [65536, 65536, 0], [0, 65536, 0]];
        build(
            &[
                ("base", [0, 0, 0], sq.clone(), vec![quad(None)]),
                (
                    "arm",
                    [65536, 0, 0],
                    sq.clone(),
                    vec![quad(Some("Tex1")), (vec![0, 1, 2], Some("tex1"), false)],
                ),
                (
                    "hand",
                    [0, 131072, 0],
                    sq.clone(),
                    vec![quad(Some("Other"))],
                ),
                ("leg", [-65536, 0, 0], sq, vec![(vec![0, 1], None, true)]),
            ],
            &[vec![1, 3], vec![2], vec![], vec![]],
        )
    }

    #[test]
    fn reads_a_tree_in_pre_order() {
        let m = parse(&cube_tree(), &ModelLimits::default()).unwrap();
        let names: Vec<&str> = m.pieces.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["base", "arm", "hand", "leg"]);
        let parents: Vec<Option<usize>> = m.pieces.iter().map(|p| p.parent).collect();
        assert_eq!(parents, [None, Some(0), Some(1), Some(0)]);
        assert_eq!(m.world_origin(2), [65536, 131072, 0]);
        assert_eq!(m.textures(), ["Tex1", "Other"]);
        assert_eq!(m.pieces[1].primitives[1].indices, [0, 1, 2]);
        assert!(m.pieces[3].primitives[0].is_colored);
    }

    /// The model without the offsets it was read at (what a fresh layout changes).
    fn shape(m: &Model) -> Model {
        let mut m = m.clone();
        for p in &mut m.pieces {
            (p.offset, p.name_offset, p.vertex_offset, p.primitive_offset) = (0, 0, 0, 0);
            for q in &mut p.primitives {
                (q.offset, q.index_offset, q.texture_offset) = (0, 0, 0);
            }
        }
        m
    }

    #[test]
    fn writes_back_identical_and_edits_in_place() {
        let lim = ModelLimits::default();
        let data = cube_tree();
        let m = parse(&data, &lim).unwrap();
        assert_eq!(write(&m, Some(&data)).unwrap(), data);
        // one vertex moved: only its word changes
        let mut e = m.clone();
        e.pieces[2].vertices[1][1] = 12345;
        let out = write(&e, Some(&data)).unwrap();
        let diff: Vec<usize> = (0..data.len()).filter(|&i| out[i] != data[i]).collect();
        let at = e.pieces[2].vertex_offset as usize + 12 + 4;
        assert!(!diff.is_empty() && diff.iter().all(|&i| (at..at + 4).contains(&i)));
        assert_eq!(parse(&out, &lim).unwrap(), e);
        // a longer name: a fresh layout that reads back as the model
        let mut r = m.clone();
        r.pieces[1].name = "a much longer arm".into();
        r.pieces[3].primitives.push(Primitive {
            offset: 0,
            color: 7,
            indices: vec![0, 1, 2],
            texture: Some("New".into()),
            is_colored: false,
            index_offset: 0,
            texture_offset: 0,
            unknown: [0; 3],
            colored_word: 0,
        });
        let out = write(&r, Some(&data)).unwrap();
        assert_eq!(shape(&parse(&out, &lim).unwrap()), shape(&r));
        let fresh = write(&m, None).unwrap();
        assert_eq!(shape(&parse(&fresh, &lim).unwrap()), shape(&m));
        // a broken tree is refused
        let mut bad = m;
        bad.pieces[1].parent = Some(3);
        assert!(write(&bad, None).is_err());
    }

    #[test]
    fn shared_lists_are_budgeted_once_per_use() {
        // three pieces sharing one primitive array of 2 primitives sharing one index list
        let mut data = build(
            &[
                (
                    "a",
                    [0; 3],
                    vec![[0; 3]; 3],
                    vec![(vec![0, 1, 2], None, true); 2],
                ),
                ("b", [0; 3], vec![[0; 3]; 3], vec![]),
                ("c", [0; 3], vec![[0; 3]; 3], vec![]),
            ],
            &[vec![1, 2], vec![], vec![]],
        );
        let root_prims = data[40..44].to_vec();
        for h in [52, 104] {
            data[h + 8..h + 12].copy_from_slice(&2i32.to_le_bytes());
            data[h + 40..h + 44].copy_from_slice(&root_prims);
        }
        let lim = ModelLimits::default();
        let c = measure(&data, &lim).unwrap();
        assert_eq!(
            (c.objects, c.vertices, c.primitives, c.indices),
            (3, 9, 6, 18)
        );
        let m = parse(&data, &lim).unwrap();
        assert_eq!(expanded_cost(&m), c.expanded_bytes());
        let tight = ModelLimits {
            max_expanded_bytes: c.expanded_bytes() - 1,
            ..lim
        };
        let e = parse(&data, &tight).unwrap_err();
        assert!(matches!(e, O3doError::Limit { .. }), "{e}");
        assert!(e.to_string().contains("once expanded"), "{e}");
        assert_eq!(measure(&data, &tight).unwrap_err(), e);
    }

    #[test]
    fn malformed_models_are_clean_errors() {
        let lim = ModelLimits::default();
        let good = cube_tree();
        for n in 0..good.len() {
            assert!(parse(&good[..n], &lim).is_err(), "prefix {n}");
        }
        // A child pointing back at the root: a cycle.
        let mut cyc = good.clone();
        cyc[2 * 52 + 48..2 * 52 + 52].copy_from_slice(&0i32.to_le_bytes());
        cyc[2 * 52 + 48..2 * 52 + 52].copy_from_slice(&52i32.to_le_bytes());
        assert!(matches!(
            parse(&cyc, &lim),
            Err(O3doError::Malformed { offset: 52, .. })
        ));
        // A sibling pointing at itself.
        let mut me = good.clone();
        me[3 * 52 + 44..3 * 52 + 48].copy_from_slice(&(3 * 52i32).to_le_bytes());
        assert!(parse(&me, &lim).is_err());
        // Huge counts.
        let mut huge = good.clone();
        huge[4..8].copy_from_slice(&i32::MAX.to_le_bytes());
        assert!(matches!(parse(&huge, &lim), Err(O3doError::Limit { .. })));
        let mut neg = good.clone();
        neg[8..12].copy_from_slice(&(-1i32).to_le_bytes());
        assert!(matches!(
            parse(&neg, &lim),
            Err(O3doError::Malformed { .. })
        ));
        // Depth over the budget.
        let shallow = ModelLimits {
            max_depth: 1,
            ..lim
        };
        assert!(matches!(
            parse(&good, &shallow),
            Err(O3doError::Limit { .. })
        ));
        let few = ModelLimits {
            max_objects: 3,
            ..lim
        };
        assert!(matches!(parse(&good, &few), Err(O3doError::Limit { .. })));
        // A vertex index past the piece's vertices.
        let mut idx = good;
        let m = parse(&idx, &lim).unwrap();
        let first = m.pieces[0].primitives[0].offset as usize;
        let io = i32::from_le_bytes(idx[first + 12..first + 16].try_into().unwrap()) as usize;
        idx[io..io + 2].copy_from_slice(&9u16.to_le_bytes());
        assert!(matches!(
            parse(&idx, &lim),
            Err(O3doError::Malformed { .. })
        ));
    }
}
