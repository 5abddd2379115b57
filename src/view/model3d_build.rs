//! A 3DO built back from its view ([`build`]): `pieces.csv` gives the pieces, their parents
//! and offsets; each OBJ object (`o`, or `g` in a file without `o`) the vertices and faces
//! of the piece of that name, in model space with z negated and faces reversed as
//! [`super::obj_text`] writes them. The base model (the file the view came from) keeps what
//! the OBJ does not show: invisible primitives, points, the selection primitive, unknown
//! words, texture spellings; its drawn primitives take the OBJ's faces and lines in order.

use super::{color_material, obj_name, texture_material, Textures, OBJ, PIECES};
use crate::formats::o3do::{self, Model, ModelLimits, Piece, Primitive, FIXED_ONE};
use crate::view::csv::csv_err;
use crate::view::{FileSet, ViewError};
use std::collections::HashMap;

/// One face (`f`) or line (`l`) of the OBJ.
struct Elem {
    line: usize,
    material: Option<String>,
    /// No `usemtl` in the element's object before it, or (a line) none since the last
    /// face: Blender writes lines without one. The element keeps the material of the
    /// primitive it replaces.
    inherited: bool,
    is_line: bool,
    /// 0-based global vertex numbers, as written.
    vertices: Vec<usize>,
}

/// One object of the OBJ.
struct Object {
    name: String,
    line: usize,
    /// Vertices declared inside the object (global numbers).
    declared: std::ops::Range<usize>,
    elems: Vec<Elem>,
}

fn obj_err(line: usize, msg: impl std::fmt::Display) -> ViewError {
    ViewError::invalid(OBJ, format!("line {line}: {msg}"))
}

/// Parses the OBJ subset a model needs; other statements (`vt`, `vn`, `s`, `mtllib`, …) are
/// skipped. Budgets from `limits`.
fn parse_obj(text: &str, limits: &ModelLimits) -> Result<(Vec<[f64; 3]>, Vec<Object>), ViewError> {
    let use_g = !text.lines().any(|l| l.trim_start().starts_with("o "));
    let mut verts: Vec<[f64; 3]> = Vec::new();
    let mut objects: Vec<Object> = Vec::new();
    let mut material: Option<String> = None;
    // how many objects had begun when `material` was set, and whether a face came since
    let mut material_at = 0usize;
    let mut face_since = false;
    let mut elems_total = 0usize;
    let mut indices_total = 0u64;
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let l = raw.split('#').next().unwrap_or("").trim();
        let mut it = l.split_whitespace();
        let Some(key) = it.next() else { continue };
        let rest: Vec<&str> = it.collect();
        match key {
            "v" => {
                if rest.len() < 3 {
                    return Err(obj_err(line, "a vertex needs x y z"));
                }
                let mut c = [0f64; 3];
                for (k, s) in rest.iter().take(3).enumerate() {
                    c[k] = s
                        .parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite() && v.abs() < 32768.0)
                        .ok_or_else(|| {
                            obj_err(line, format!("{s:?} is not a coordinate within ±32768"))
                        })?;
                }
                if verts.len() >= limits.max_vertices {
                    return Err(obj_err(
                        line,
                        format!("more than {} vertices", limits.max_vertices),
                    ));
                }
                verts.push(c);
                if let Some(o) = objects.last_mut() {
                    o.declared.end = verts.len();
                }
            }
            "o" | "g" if (key == "o") != use_g => {
                let name = rest.join(" ");
                objects.push(Object {
                    name,
                    line,
                    declared: verts.len()..verts.len(),
                    elems: Vec::new(),
                });
            }
            "usemtl" => {
                material = rest.first().map(|s| s.to_string());
                material_at = objects.len();
                face_since = false;
            }
            "f" | "l" => {
                let min = if key == "f" { 3 } else { 2 };
                if rest.len() < min {
                    return Err(obj_err(line, format!("{key} needs {min} or more vertices")));
                }
                if rest.len() > limits.max_primitive_indices {
                    return Err(obj_err(line, format!("{} vertices", rest.len())));
                }
                elems_total += 1;
                indices_total += rest.len() as u64;
                if elems_total > limits.max_primitives {
                    return Err(obj_err(
                        line,
                        format!("more than {} faces", limits.max_primitives),
                    ));
                }
                let cost = (elems_total as u64 * o3do::PRIMITIVE_COST)
                    .saturating_add(indices_total * o3do::INDEX_COST)
                    .saturating_add(verts.len() as u64 * o3do::VERTEX_COST);
                if cost > limits.max_expanded_bytes {
                    return Err(obj_err(line, "over the model's size budget"));
                }
                let mut vs = Vec::with_capacity(rest.len());
                for tok in &rest {
                    let first = tok.split('/').next().unwrap_or("");
                    let k: i64 = first
                        .parse()
                        .map_err(|_| obj_err(line, format!("{tok:?} is not a vertex number")))?;
                    let g = if k > 0 {
                        usize::try_from(k - 1).ok()
                    } else if k < 0 {
                        usize::try_from(k.unsigned_abs())
                            .ok()
                            .and_then(|b| verts.len().checked_sub(b))
                    } else {
                        None
                    };
                    match g {
                        Some(g) if g < verts.len() => vs.push(g),
                        _ => {
                            return Err(obj_err(
                                line,
                                format!("vertex {k} does not exist ({} so far)", verts.len()),
                            ))
                        }
                    }
                }
                // a line's material is the `usemtl` right before it (editors write lines
                // without one)
                let inherited = material_at != objects.len() || (key == "l" && face_since);
                face_since |= key == "f";
                if objects.is_empty() {
                    objects.push(Object {
                        name: String::new(),
                        line,
                        declared: 0..0,
                        elems: Vec::new(),
                    });
                }
                if let Some(o) = objects.last_mut() {
                    o.elems.push(Elem {
                        line,
                        material: material.clone(),
                        inherited,
                        is_line: key == "l",
                        vertices: vs,
                    });
                }
            }
            _ => {}
        }
    }
    Ok((verts, objects))
}

/// A row of `pieces.csv`.
struct Row {
    line: u64,
    name: String,
    parent: String,
    origin: [i32; 3],
}

fn fixed(v: f64) -> Option<i32> {
    let f = (v * FIXED_ONE).round();
    (f.is_finite() && f >= f64::from(i32::MIN) && f <= f64::from(i32::MAX)).then_some(f as i32)
}

fn parse_pieces(text: &[u8], limits: &ModelLimits) -> Result<Vec<Row>, ViewError> {
    let mut rd = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(true)
        .from_reader(text);
    let err = |row: u64, col: &str, msg: String| csv_err(PIECES, row, col, msg);
    let headers = rd
        .headers()
        .map_err(|e| err(1, "header", e.to_string()))?
        .clone();
    let col = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
    let cols: Vec<usize> = ["name", "parent", "x", "y", "z"]
        .iter()
        .map(|c| col(c).ok_or_else(|| err(1, c, format!("no column {c:?}"))))
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            err(line, "", e.to_string())
        })?;
        let line = rec.position().map_or(0, |p| p.line());
        if rows.len() >= limits.max_objects {
            return Err(err(
                line,
                "",
                format!("more than {} pieces", limits.max_objects),
            ));
        }
        let get = |k: usize| rec.get(cols[k]).unwrap_or("");
        let mut origin = [0i32; 3];
        for (k, c) in ["x", "y", "z"].iter().enumerate() {
            let s = get(2 + k);
            origin[k] = s
                .parse::<f64>()
                .ok()
                .and_then(fixed)
                .ok_or_else(|| err(line, c, format!("{s:?} is not a coordinate")))?;
        }
        rows.push(Row {
            line,
            name: get(0).to_string(),
            parent: get(1).to_string(),
            origin,
        });
    }
    Ok(rows)
}

/// Rebuilds the 3DO from the files of its view; `base` is the current binary (what the OBJ
/// does not show is taken from it), `textures` the game's (a material naming a texture
/// neither the base nor the game has is an error).
pub fn build(
    files: &dyn FileSet,
    base: Option<&[u8]>,
    textures: Option<&Textures>,
    limits: &ModelLimits,
) -> Result<Vec<u8>, ViewError> {
    let obj = files.read(OBJ)?.ok_or_else(|| ViewError::Missing {
        file: OBJ.into(),
        why: "the geometry of the model".into(),
    })?;
    let obj = String::from_utf8_lossy(&obj);
    let (verts, objects) = parse_obj(&obj, limits)?;
    let old = base
        .map(|b| o3do::parse(b, limits))
        .transpose()
        .map_err(|e| ViewError::invalid("", e.to_string()))?;
    let rows = match files.read(PIECES)? {
        Some(t) => parse_pieces(&t, limits)?,
        None => objects
            .iter()
            .enumerate()
            .map(|(i, o)| Row {
                line: 0,
                name: o.name.clone(),
                parent: if i == 0 {
                    String::new()
                } else {
                    objects[0].name.clone()
                },
                origin: [0; 3],
            })
            .collect(),
    };
    if rows.is_empty() {
        return Err(ViewError::invalid(PIECES, "no pieces"));
    }
    // pre-order from the root, siblings in row order
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); rows.len()];
    let mut root = None;
    // a name several pieces share (stock models have some) names, as a parent, the
    // nearest row above with that name
    for (i, r) in rows.iter().enumerate() {
        if r.parent.is_empty() {
            if root.replace(i).is_some() {
                return Err(csv_err(PIECES, r.line, "parent", "a second root piece"));
            }
        } else {
            let p = rows[..i]
                .iter()
                .rposition(|q| q.name == r.parent)
                .or_else(|| rows.iter().position(|q| q.name == r.parent))
                .ok_or_else(|| {
                    csv_err(PIECES, r.line, "parent", format!("no piece {:?}", r.parent))
                })?;
            children[p].push(i);
        }
    }
    let root = root.ok_or_else(|| ViewError::invalid(PIECES, "no root piece (empty parent)"))?;
    let mut order: Vec<(usize, Option<usize>, usize)> = Vec::new();
    let mut stack = vec![(root, None, 0usize)];
    while let Some((i, parent, depth)) = stack.pop() {
        if order.len() >= rows.len() || depth > limits.max_depth {
            return Err(ViewError::invalid(
                PIECES,
                "the parents form a cycle or too deep a tree",
            ));
        }
        let me = order.len();
        order.push((i, parent, depth));
        for &c in children[i].iter().rev() {
            stack.push((c, Some(me), depth + 1));
        }
    }
    if order.len() != rows.len() {
        let lost = (0..rows.len())
            .find(|i| !order.iter().any(|o| o.0 == *i))
            .unwrap_or(0);
        return Err(csv_err(
            PIECES,
            rows[lost].line,
            "parent",
            "not reachable from the root (a cycle of parents)",
        ));
    }
    // an OBJ whose faces are all the base's own, where they were (an editor's re-export
    // that dropped unused vertices or reordered objects): the base unchanged
    if let (Some(m), Some(b)) = (&old, base) {
        if let Some(o) = objects.first() {
            if let Ok(same) = unchanged_by_position(m, b, &verts, &objects, o) {
                if files
                    .read(PIECES)?
                    .map_or(true, |t| t == super::pieces_csv(m).as_bytes())
                {
                    return Ok(same);
                }
            }
        }
    }
    // every object names a piece; else (an export that regroups faces, by material say)
    // the faces can only be the base's own, found by their positions
    // (vertices before the first object belong to no piece: such a file too)
    let loose = objects.first().map_or(0, |o| o.declared.start) > 0;
    for o in &objects {
        let empty = o.elems.is_empty() && o.declared.is_empty();
        if !empty && (loose || !rows.iter().any(|r| obj_name(&r.name) == o.name)) {
            return match (&old, base) {
                (Some(m), Some(b)) => unchanged_by_position(m, b, &verts, &objects, o),
                _ => Err(obj_err(
                    o.line,
                    format!("object {:?} is no piece of {PIECES}", o.name),
                )),
            };
        }
    }
    let mut model = Model { pieces: Vec::new() };
    // per piece (in `order`): where it is in model space, and how far the OBJ moved it
    // from where the base has it
    let mut world: Vec<[i64; 3]> = Vec::new();
    let mut shifts: Vec<[i64; 3]> = Vec::new();
    for &(i, parent, depth) in &order {
        let r = &rows[i];
        let root = model.pieces.is_empty();
        // the n-th piece of a name is the n-th of the base and the n-th object of the OBJ
        let occ = rows[..i].iter().filter(|q| q.name == r.name).count();
        let old_index = old.as_ref().and_then(|m| {
            m.pieces
                .iter()
                .enumerate()
                .filter(|(_, p)| p.name == r.name)
                .nth(occ)
                .map(|(k, _)| k)
        });
        let oldp = old
            .as_ref()
            .zip(old_index)
            .and_then(|(m, k)| m.pieces.get(k));
        let ob = objects
            .iter()
            .filter(|o| o.name == obj_name(&r.name))
            .nth(occ);
        let parent_shift = parent.map_or([0; 3], |p| shifts[p]);
        let parent_world = parent.map_or([0; 3], |p| world[p]);
        let Some(ob) = ob else {
            // not in the OBJ: no faces drawn (editors leave out objects without faces);
            // what the OBJ cannot show stays, and the piece follows its parent
            let mut piece = new_piece(oldp, r, parent, depth);
            if oldp.is_some() {
                let keep: Vec<bool> = (0..piece.primitives.len())
                    .map(|k| !super::is_drawn(&piece, root, k))
                    .collect();
                let mut k = 0;
                piece.primitives.retain(|_| {
                    k += 1;
                    keep[k - 1]
                });
            } else {
                piece.vertices.clear();
                piece.primitives.clear();
            }
            world.push(add(parent_world, piece.origin.map(i64::from)));
            shifts.push(parent_shift);
            model.pieces.push(piece);
            continue;
        };
        // the piece's vertices: those declared in its object, else those its faces use
        let mut list: Vec<usize> = ob.declared.clone().collect();
        if list.is_empty() {
            let mut seen = std::collections::HashSet::new();
            for e in &ob.elems {
                for &v in &e.vertices {
                    if seen.insert(v) {
                        list.push(v);
                    }
                }
            }
        }
        if list.len() > usize::from(u16::MAX) + 1 {
            return Err(obj_err(ob.line, "more than 65,536 vertices in one piece"));
        }
        let layout = match oldp {
            Some(p) => vertex_layout(p, root, ob, &list),
            None => Layout::Fresh,
        };
        // model space, 16.16 units, the 3DO's axes (z negated back), not yet rounded
        let at = |g: usize| {
            let c = verts[g];
            [c[0] * FIXED_ONE, c[1] * FIXED_ONE, -c[2] * FIXED_ONE]
        };
        // a piece whose vertices the OBJ all moved by one amount has moved: its offset
        // takes the move (OBJ has no pivots); no evidence (fewer than two vertices to
        // compare): it follows its parent
        let shift = match (&layout, old.as_ref().zip(old_index).zip(oldp)) {
            (Layout::Kept(slots), Some(((m, k), p))) if slots.len() >= 2 => {
                let wb = m.world_origin(k);
                let deltas: Vec<[f64; 3]> = list
                    .iter()
                    .zip(slots)
                    .map(|(&g, &s)| {
                        let a = at(g);
                        let b = p.vertices.get(s).copied().unwrap_or([0; 3]);
                        [0, 1, 2].map(|x| a[x] - (wb[x] + i64::from(b[x])) as f64)
                    })
                    .collect();
                uniform(&deltas).unwrap_or([0; 3])
            }
            _ => parent_shift,
        };
        let mut piece = new_piece(oldp, r, parent, depth);
        for k in 0..3 {
            piece.origin[k] = i64::from(r.origin[k])
                .checked_add(shift[k] - parent_shift[k])
                .and_then(|v| i32::try_from(v).ok())
                .ok_or_else(|| csv_err(PIECES, r.line, "x", "the moved offset is out of range"))?;
        }
        let w = add(parent_world, piece.origin.map(i64::from));
        world.push(w);
        shifts.push(shift);
        let local_of = |g: usize, base: Option<i32>, k: usize| -> Result<i32, ViewError> {
            let t = at(g)[k] - w[k] as f64;
            // within one step of the base's value: the base's (float noise of an editor)
            if let Some(b) = base.filter(|&b| (t - f64::from(b)).abs() < 1.0) {
                return Ok(b);
            }
            let t = t.round();
            (t.is_finite() && t >= f64::from(i32::MIN) && t <= f64::from(i32::MAX))
                .then_some(t as i32)
                .ok_or_else(|| obj_err(ob.line, format!("vertex {} out of range", g + 1)))
        };
        // OBJ vertex number → the piece's vertex index
        let mut local: HashMap<usize, u16> = HashMap::new();
        // base vertex index → new index, for primitives the OBJ does not show
        let mut hidden_map: Option<HashMap<u16, u16>> = None;
        match &layout {
            Layout::Kept(slots) => {
                for (&g, &s) in list.iter().zip(slots) {
                    let b = piece.vertices.get(s).copied();
                    let mut out = [0i32; 3];
                    for (k, o) in out.iter_mut().enumerate() {
                        *o = local_of(g, b.map(|b| b[k]), k)?;
                    }
                    if let Some(v) = piece.vertices.get_mut(s) {
                        *v = out;
                    }
                    local.insert(g, s as u16);
                }
            }
            Layout::Appended(_) | Layout::Fresh => {
                let kept: &[u16] = match &layout {
                    Layout::Appended(k) => k,
                    _ => &[],
                };
                let base_vertices = std::mem::take(&mut piece.vertices);
                for (j, &g) in list.iter().enumerate() {
                    let mut out = [0i32; 3];
                    for (k, o) in out.iter_mut().enumerate() {
                        *o = local_of(g, None, k)?;
                    }
                    piece.vertices.push(out);
                    local.insert(g, j as u16);
                }
                let mut map = HashMap::new();
                for &u in kept {
                    if let Some(v) = base_vertices.get(usize::from(u)) {
                        map.insert(u, piece.vertices.len() as u16);
                        piece.vertices.push(*v);
                    }
                }
                if matches!(layout, Layout::Appended(_)) {
                    hidden_map = Some(map);
                }
            }
        }
        // the OBJ's faces and lines replace the drawn primitives: each takes the place of
        // the base primitive it equals (same corners, same material), the others fill the
        // remaining places in order; what is left over is added, places left empty removed
        let drawn_at: Vec<bool> = (0..piece.primitives.len())
            .map(|k| super::is_drawn(&piece, root, k))
            .collect();
        let mut indices_of: Vec<Vec<u16>> = Vec::with_capacity(ob.elems.len());
        for e in &ob.elems {
            let mut ix = Vec::with_capacity(e.vertices.len());
            for g in &e.vertices {
                let v = local.get(g).ok_or_else(|| {
                    obj_err(
                        e.line,
                        format!("vertex {} belongs to another object", g + 1),
                    )
                })?;
                ix.push(*v);
            }
            if !e.is_line {
                ix.reverse();
            }
            indices_of.push(ix);
        }
        let mut by_corners: HashMap<&[u16], Vec<usize>> = HashMap::new();
        for (k, q) in piece.primitives.iter().enumerate().rev() {
            if drawn_at[k] {
                by_corners.entry(q.indices.as_slice()).or_default().push(k);
            }
        }
        // faces with a repeated corner, as an editor that merges it writes them
        let mut by_merged: HashMap<Vec<u16>, Vec<usize>> = HashMap::new();
        for (k, q) in piece.primitives.iter().enumerate().rev() {
            if drawn_at[k] && q.indices.len() > 3 {
                if let Some(m) = merged_corners(&q.indices) {
                    by_merged.entry(m).or_default().push(k);
                }
            }
        }
        let mut slot_elem: Vec<Option<usize>> = vec![None; piece.primitives.len()];
        let mut placed = vec![false; ob.elems.len()];
        for (ei, e) in ob.elems.iter().enumerate() {
            if let Some(ks) = by_corners.get_mut(indices_of[ei].as_slice()) {
                if let Some(pos) = ks.iter().rposition(|&k| {
                    slot_elem[k].is_none()
                        && piece.primitives.get(k).is_some_and(|q| same_material(q, e))
                }) {
                    let k = ks.remove(pos);
                    slot_elem[k] = Some(ei);
                    placed[ei] = true;
                    continue;
                }
            }
            // matched with its repeated corner merged: the base's corners stay
            if let Some(ks) = by_merged.get_mut(&least_rotation(&indices_of[ei])) {
                if let Some(pos) = ks.iter().rposition(|&k| {
                    slot_elem[k].is_none()
                        && piece.primitives.get(k).is_some_and(|q| same_material(q, e))
                }) {
                    let k = ks.remove(pos);
                    slot_elem[k] = Some(ei);
                    placed[ei] = true;
                    if let Some(q) = piece.primitives.get(k) {
                        indices_of[ei] = q.indices.clone();
                    }
                }
            }
        }
        // a line along an edge of a face: editors fold it into the edge, so one the OBJ
        // lacks stays
        let mut face_edges: std::collections::HashSet<(u16, u16)> =
            std::collections::HashSet::new();
        for (ei, e) in ob.elems.iter().enumerate() {
            let ix = &indices_of[ei];
            if !e.is_line {
                for k in 0..ix.len() {
                    let (a, b) = (ix[k], ix[(k + 1) % ix.len()]);
                    face_edges.insert((a.min(b), a.max(b)));
                }
            }
        }
        let folded = |q: &Primitive| {
            q.indices.len() == 2 && {
                let (a, b) = (q.indices[0], q.indices[1]);
                face_edges.contains(&(a.min(b), a.max(b)))
            }
        };
        let mut rest = (0..ob.elems.len()).filter(|&ei| !placed[ei]);
        let mut new_prims: Vec<Primitive> = Vec::new();
        for (k, q) in piece.primitives.iter().enumerate() {
            if !drawn_at[k] {
                let mut q = q.clone();
                if let Some(map) = hidden_map.as_mut() {
                    for v in q.indices.iter_mut() {
                        let n = match map.get(v) {
                            Some(n) => *n,
                            None => {
                                // a vertex a face also uses: a copy of the base's
                                let b = oldp
                                    .and_then(|p| p.vertices.get(usize::from(*v)))
                                    .copied()
                                    .unwrap_or([0; 3]);
                                let n = u16::try_from(piece.vertices.len()).map_err(|_| {
                                    obj_err(ob.line, "more than 65,536 vertices in one piece")
                                })?;
                                piece.vertices.push(b);
                                map.insert(*v, n);
                                n
                            }
                        };
                        *v = n;
                    }
                }
                new_prims.push(q);
                continue;
            }
            if slot_elem[k].is_none() && folded(q) {
                new_prims.push(q.clone());
                continue;
            }
            if let Some(ei) = slot_elem[k].or_else(|| rest.next()) {
                new_prims.push(primitive_from(
                    &ob.elems[ei],
                    indices_of[ei].clone(),
                    Some(q),
                    old.as_ref(),
                    textures,
                )?);
            }
        }
        for ei in rest {
            new_prims.push(primitive_from(
                &ob.elems[ei],
                indices_of[ei].clone(),
                None,
                old.as_ref(),
                textures,
            )?);
        }
        if piece.vertices.len() > usize::from(u16::MAX) + 1 {
            return Err(obj_err(ob.line, "more than 65,536 vertices in one piece"));
        }
        // hidden primitives must still index existing vertices
        for q in &new_prims {
            if let Some(v) = q
                .indices
                .iter()
                .find(|&&v| usize::from(v) >= piece.vertices.len())
            {
                return Err(obj_err(
                    ob.line,
                    format!(
                        "piece {:?} has {} vertices, a primitive the OBJ does not show uses vertex {}",
                        r.name,
                        piece.vertices.len(),
                        v
                    ),
                ));
            }
        }
        piece.primitives = new_prims;
        model.pieces.push(piece);
    }
    if o3do::expanded_cost(&model) > limits.max_expanded_bytes {
        return Err(ViewError::invalid(OBJ, "over the model's size budget"));
    }
    o3do::write(&model, base).map_err(|e| ViewError::invalid("", e.to_string()))
}

/// The corners of a face with each corner that repeats the one before it dropped, as
/// Blender imports such a face, in [`least_rotation`]; `None` when none repeats.
fn merged_corners(ix: &[u16]) -> Option<Vec<u16>> {
    let mut out: Vec<u16> = Vec::with_capacity(ix.len());
    for &v in ix.iter().rev() {
        if out.last() != Some(&v) {
            out.push(v);
        }
    }
    if out.len() > 1 && out.first() == out.last() {
        out.pop();
    }
    out.reverse();
    (out.len() < ix.len()).then(|| least_rotation(&out))
}

/// `ix` rotated to start where it is least (Blender may start a merged face at any
/// corner).
fn least_rotation(ix: &[u16]) -> Vec<u16> {
    let n = ix.len();
    let rot = |r: usize| {
        ix[r..]
            .iter()
            .chain(&ix[..r])
            .copied()
            .collect::<Vec<u16>>()
    };
    (0..n).map(rot).min().unwrap_or_default()
}

/// How the vertices an OBJ object lists stand for those of its base piece.
enum Layout {
    /// The j-th listed vertex is the base's vertex `slots[j]`; the base's other vertices
    /// keep their place and value (the layout is the base's).
    Kept(Vec<usize>),
    /// The listed vertices, then these base vertices no face or line uses (an editor that
    /// drops them, where vertices were also added or removed).
    Appended(Vec<u16>),
    /// The listed vertices only.
    Fresh,
}

/// The rule for vertices an editor may have dropped. An object that lists as many
/// vertices as the base piece has: one for one. An object all of whose vertices its faces
/// or lines use (what editors that drop unused vertices write), of a piece with vertices no
/// drawn primitive uses: those are kept (an editor cannot show them, so cannot delete
/// them); the listed vertices stand for the used ones in order when the counts agree,
/// else come first with the kept ones after. Otherwise (an object that lists an unused
/// vertex, such as the OBJ tafs writes) the list is the piece's vertices: a vertex left
/// out is deleted.
fn vertex_layout(p: &Piece, root: bool, ob: &Object, list: &[usize]) -> Layout {
    if list.len() == p.vertices.len() {
        return Layout::Kept((0..list.len()).collect());
    }
    let mut used = vec![false; p.vertices.len()];
    for (k, q) in p.primitives.iter().enumerate() {
        if super::is_drawn(p, root, k) {
            for &v in &q.indices {
                if let Some(u) = used.get_mut(usize::from(v)) {
                    *u = true;
                }
            }
        }
    }
    let in_elems: std::collections::HashSet<usize> = ob
        .elems
        .iter()
        .flat_map(|e| e.vertices.iter().copied())
        .collect();
    let compact = list.iter().all(|g| in_elems.contains(g));
    let unused: Vec<u16> = (0..p.vertices.len())
        .filter(|&k| !used[k])
        .map(|k| k as u16)
        .collect();
    if !compact || unused.is_empty() {
        return Layout::Fresh;
    }
    let used_at: Vec<usize> = (0..p.vertices.len()).filter(|&k| used[k]).collect();
    if used_at.len() == list.len() {
        Layout::Kept(used_at)
    } else {
        Layout::Appended(unused)
    }
}

/// The one amount (16.16 units) every delta is within a step of, when there is one
/// (per axis; under two steps is no move).
fn uniform(deltas: &[[f64; 3]]) -> Option<[i64; 3]> {
    let mut d = [0i64; 3];
    for (k, dk) in d.iter_mut().enumerate() {
        let mut xs: Vec<f64> = deltas.iter().map(|v| v[k]).collect();
        xs.sort_by(f64::total_cmp);
        let m = *xs.get(xs.len() / 2)?;
        if !m.is_finite() || m.abs() > f64::from(i32::MAX) {
            return None;
        }
        if xs.iter().any(|x| (x - m).abs() >= 1.0) {
            return None;
        }
        // less than two steps: an editor's rounding (Blender's axis conversion shifts z by
        // up to a step), not a move
        *dk = if m.abs() < 2.0 { 0 } else { m.round() as i64 };
    }
    Some(d)
}

fn add(a: [i64; 3], b: [i64; 3]) -> [i64; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// The piece of row `r`: the base's, at its new place in the tree, or a new one.
fn new_piece(oldp: Option<&Piece>, r: &Row, parent: Option<usize>, depth: usize) -> Piece {
    match oldp {
        Some(p) => Piece {
            parent,
            depth,
            origin: r.origin,
            ..p.clone()
        },
        None => Piece {
            offset: 0,
            name: r.name.clone(),
            parent,
            depth,
            selection_primitive: -1,
            origin: r.origin,
            vertices: Vec::new(),
            primitives: Vec::new(),
            name_offset: 0,
            unknown: 0,
            vertex_offset: 0,
            primitive_offset: 0,
        },
    }
}

/// True when `e` keeps the material of `like` (the same one, or none set in its object).
fn same_material(like: &Primitive, e: &Elem) -> bool {
    match (&like.texture, e.material.as_deref()) {
        _ if e.inherited => true,
        (Some(t), Some(m)) => texture_material(t).eq_ignore_ascii_case(m),
        (None, Some(m)) => color_material(like.color) == m,
        (_, None) => false,
    }
}

/// The primitive of an OBJ face or line with corners `indices` (the piece's vertex
/// indices, in the 3DO's winding): `like` (the base's primitive at its place) keeps its
/// words and texture spelling when the material is unchanged.
fn primitive_from(
    e: &Elem,
    indices: Vec<u16>,
    like: Option<&Primitive>,
    old: Option<&Model>,
    textures: Option<&Textures>,
) -> Result<Primitive, ViewError> {
    let mut q = like.cloned().unwrap_or(Primitive {
        offset: 0,
        color: 0,
        indices: Vec::new(),
        texture: None,
        is_colored: false,
        index_offset: 0,
        texture_offset: 0,
        unknown: [0; 3],
        colored_word: 0,
    });
    q.indices = indices;
    // one material per texture name ignoring case (as the OBJ is written)
    let same = like.is_some_and(|l| same_material(l, e));
    if same {
        return Ok(q);
    }
    let Some(m) = e.material.as_deref() else {
        return Err(obj_err(e.line, "a face without a material (usemtl)"));
    };
    if let Some(c) = m.strip_prefix("color_").and_then(|c| c.parse::<i32>().ok()) {
        if !(0..256).contains(&c) {
            return Err(obj_err(
                e.line,
                format!("material {m}: no palette colour {c}"),
            ));
        }
        q.texture = None;
        q.color = c;
        q.is_colored = true;
        return Ok(q);
    }
    // a texture: spelt as the base spells it, else as the game's textures have it
    let known = old.and_then(|m2| m2.textures().into_iter().find(|t| texture_material(t) == m));
    let name = match known {
        Some(t) => t,
        None => match textures {
            Some(t) if t.get(m).is_some() => m.to_string(),
            Some(_) => {
                return Err(obj_err(
                    e.line,
                    format!("material {m}: no texture of that name in the game's textures/*.gaf"),
                ))
            }
            None => m.to_string(),
        },
    };
    q.texture = Some(name);
    q.is_colored = false;
    Ok(q)
}

/// The base model rebuilt from an OBJ whose objects are not its pieces (`foreign` is the
/// first such object): every face and line must be one of the base's drawn primitives, the
/// same positions (16.16) in the same order and the same material, each used once; the
/// result is then the base itself. Anything else is an error that says so.
fn unchanged_by_position(
    model: &Model,
    base: &[u8],
    verts: &[[f64; 3]],
    objects: &[Object],
    foreign: &Object,
) -> Result<Vec<u8>, ViewError> {
    type Key = (Vec<[i64; 3]>, String);
    let mut want: HashMap<Key, usize> = HashMap::new();
    let mut total = 0usize;
    let names = model.textures();
    for (pi, p) in model.pieces.iter().enumerate() {
        let o = model.world_origin(pi);
        for (k, q) in p.primitives.iter().enumerate() {
            if !super::is_drawn(p, pi == 0, k) {
                continue;
            }
            let pos: Vec<[i64; 3]> = q
                .indices
                .iter()
                .filter_map(|&i| p.vertices.get(usize::from(i)))
                .map(|v| {
                    [
                        o[0] + i64::from(v[0]),
                        o[1] + i64::from(v[1]),
                        o[2] + i64::from(v[2]),
                    ]
                })
                .collect();
            let mat = match &q.texture {
                Some(t) => texture_material(
                    names
                        .iter()
                        .find(|n| n.eq_ignore_ascii_case(t))
                        .unwrap_or(t),
                ),
                None => color_material(q.color),
            };
            *want.entry((pos, mat.to_ascii_lowercase())).or_default() += 1;
            total += 1;
        }
    }
    let mut seen = 0usize;
    for e in objects.iter().flat_map(|o| &o.elems) {
        let mut pos: Vec<[i64; 3]> = e
            .vertices
            .iter()
            .map(|&g| {
                let c = verts[g];
                [c[0], c[1], -c[2]].map(|x| fixed(x).map_or(i64::MAX, i64::from))
            })
            .collect();
        if !e.is_line {
            pos.reverse();
        }
        let mat = e.material.clone().unwrap_or_default().to_ascii_lowercase();
        // a face may start at any of its corners
        let n = pos.len();
        let hit = (0..n).find_map(|r| {
            let mut p = pos.clone();
            p.rotate_left(r);
            let key = (p, mat.clone());
            want.get(&key).filter(|&&c| c > 0).map(|_| key)
        });
        let Some(key) = hit else {
            return Err(obj_err(
                e.line,
                format!(
                    "object {:?} is no piece of {PIECES}, and this face is not one of the \
                     model's own: an OBJ that regroups the faces (by material, say) can only \
                     give the model back unchanged; edit an OBJ with one object per piece",
                    foreign.name
                ),
            ));
        };
        if let Some(c) = want.get_mut(&key) {
            *c -= 1;
        }
        seen += 1;
    }
    if seen != total {
        return Err(obj_err(
            foreign.line,
            format!(
                "object {:?} is no piece of {PIECES} and the OBJ has {seen} of the model's \
                 {total} faces: an OBJ that regroups the faces can only give the model back \
                 unchanged",
                foreign.name
            ),
        ));
    }
    Ok(base.to_vec())
}
