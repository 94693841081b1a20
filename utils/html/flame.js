  /* ---- flame graph (utils/html/flame.js: the viewer's and the diff page's) -------- */

  // The children of each node of a tree numbered parents first (node 0 the root,
  // parent[0] = -1) in the flame graph's order, by name(node): those of node n are
  // list[start[n]] to list[start[n + 1] - 1].
  function flameChildren(parent, name) {
    const nNodes = parent.length;
    const start = new Int32Array(nNodes + 1);
    const list = new Int32Array(Math.max(nNodes - 1, 0));
    for (let i = 1; i < nNodes; i++) start[parent[i] + 1]++;
    for (let i = 0; i < nNodes; i++) start[i + 1] += start[i];
    const fill = start.slice(0, nNodes);
    for (let i = 1; i < nNodes; i++) list[fill[parent[i]]++] = i;
    const byName = (a, b) => {
      const x = name(a), y = name(b);
      return x < y ? -1 : x > y ? 1 : a - b;
    };
    for (let i = 0; i < nNodes; i++) {
      if (start[i + 1] - start[i] > 1) list.subarray(start[i], start[i + 1]).sort(byName);
    }
    return { start, list };
  }

  // The two colourings.  By name (the viewer): a hue from the name's hash, warm for
  // Python functions and blue-green for native (C) ones.
  function flameNameColour(name, native) {
    const h = hashHue(name);
    const base = native ? 170 : 8;
    return 'hsl(' + (base + h % 42) + ',' + (62 + (h >> 8) % 20) + '%,' +
      (58 + (h >> 16) % 14) + '%)';
  }
  // By difference (the diff page), from a frame's weight on each side, a and b, and its
  // sign (1 grew, -1 shrank beyond the noise, 0 neither): red where it grew, blue where it
  // shrank, darker for a larger change; grey otherwise.
  function flameChangeColour(a, b, sign) {
    if (!sign) return '#c9c9c9';
    const big = Math.max(a, b);
    const strength = big > 0 ? Math.min(1, Math.abs(b - a) / big) : 0;
    const light = Math.round(78 - 30 * strength);
    return sign > 0 ? 'hsl(4, 75%, ' + light + '%)' : 'hsl(220, 75%, ' + light + '%)';
  }

  // A flame graph on a canvas, root at the top, callers above callees: each frame is as
  // wide as its weight, siblings in the tree's order, frames narrower than `min` px left
  // out with their callees.  Hovering shows a frame's tooltip; a click zooms into it (its
  // callers stay above it, full width).  `o` gives:
  //   canvas      the canvas
  //   tree        { parent, depth, start, list }: node 0 the root, parent[0] = -1, each
  //               node's depth, the children as flameChildren gives them
  //   weight      each node's weight with its callees (an array the page may refill
  //               between draws)
  //   width()     the width to draw, in css px
  //   colour(n)   a frame's fill, label(n) its text, tip(n) its tooltip (in #tip)
  //   outline(n)  optional: true for a frame to outline (the viewer's clicked stack)
  //   drawn()     optional: called after each draw
  // and where the pages' frames look different (the viewer's by default):
  //   gap, min    px left between neighbours (0.5), the narrowest frame drawn (0.4)
  //   pad         px under the last row (2)
  //   font, ink   the labels' font and colour
  //   clip        labels cut at the frame's edge, on frames wider than `clip` px; without
  //               it a label is cut to whole characters with an ellipsis, on frames wide
  //               enough for three
  //   stretch     the page's css gives the canvas its width (width: 100%): only its
  //               bitmap is sized here
  //   empty       a root that weighs nothing is drawn all the same, full width (without
  //               it, nothing is)
  // It returns the graph: draw(), zoom(n), at(event) (the node under the pointer, -1 for
  // none), and focus (the zoomed node), rows (per row, [node, x, w] triples, css px),
  // row (a row's height) and charW (a label character's mean width).
  function flameGraph(o) {
    const ROW = 18;
    const gap = o.gap === undefined ? 0.5 : o.gap, min = o.min === undefined ? 0.4 : o.min;
    const pad = o.pad === undefined ? 2 : o.pad;
    const font = o.font || '12px system-ui, sans-serif', ink = o.ink || '#1d2330';
    const canvas = o.canvas;
    const g = { focus: 0, rows: [], row: ROW, charW: 7 };

    g.draw = function () {
      const { parent, depth, start, list } = o.tree, weight = o.weight;
      const W = o.width();
      if (g.focus && weight[g.focus] <= 0) g.focus = 0;
      const focus = g.focus, ft = weight[focus];
      const rows = g.rows = [];
      let maxRow = 0;
      const push = (row, node, x, w) => {
        (rows[row] || (rows[row] = [])).push(node, x, w);
        if (row > maxRow) maxRow = row;
      };
      // The focus's callers, full width.
      for (let n = parent[focus]; n >= 0; n = parent[n]) push(depth[n], n, 0, W);
      if (ft > 0) {
        const scale = W / ft;
        const work = [focus, 0, W];
        while (work.length) {
          const w = work.pop(), x = work.pop(), n = work.pop();
          push(depth[n], n, x, w);
          let cx = x;
          for (let c = start[n]; c < start[n + 1]; c++) {
            const ch = list[c], cw = weight[ch] * scale;
            if (cw >= min) work.push(ch, cx, cw);
            cx += cw;
          }
        }
      } else if (o.empty) {
        push(depth[focus], focus, 0, W);
      }
      const dpr = window.devicePixelRatio || 1;
      const H = (maxRow + 1) * ROW + pad;
      if (!o.stretch) canvas.style.width = W + 'px';
      canvas.style.height = H + 'px';
      canvas.width = Math.round(W * dpr);
      canvas.height = Math.round(H * dpr);
      const ctx = canvas.getContext('2d');
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, W, H);
      ctx.font = font;
      ctx.textBaseline = 'middle';
      const sample = 'abcdefghijklmnopqrstuvwxyz_ABCDEF';
      const charW = g.charW = ctx.measureText(sample).width / sample.length;
      const labelMin = o.clip ? o.clip : 3 * charW + 6;
      for (let row = 0; row < rows.length; row++) {
        const r = rows[row];
        if (!r) continue;
        const y = row * ROW;
        for (let i = 0; i < r.length; i += 3) {
          const n = r[i], x = r[i + 1], w = r[i + 2];
          ctx.fillStyle = o.colour(n);
          ctx.fillRect(x, y, Math.max(w - gap, min), ROW - 1);
          if (o.outline && w >= 2 && o.outline(n)) {
            ctx.strokeStyle = '#a3190f';
            ctx.lineWidth = 2;
            ctx.strokeRect(x + 1, y + 1, Math.max(w - 2.5, 0.5), ROW - 3);
          }
          if (w > labelMin) {
            const text = o.label(n);
            ctx.fillStyle = ink;
            if (o.clip) {
              ctx.save();
              ctx.beginPath();
              ctx.rect(x, y, w - 2, ROW);
              ctx.clip();
              ctx.fillText(text, x + 3, y + ROW / 2);
              ctx.restore();
            } else {
              const max = Math.floor((w - 6) / charW);
              ctx.fillText(text.length > max ? text.slice(0, Math.max(max - 1, 1)) + '…' : text,
                           x + 3, y + ROW / 2, w - 6);
            }
          }
        }
      }
      if (o.drawn) o.drawn();
    };

    g.zoom = function (n) {
      g.focus = n;
      g.draw();
    };

    g.at = function (ev) {
      const rect = canvas.getBoundingClientRect();
      const x = ev.clientX - rect.left, y = ev.clientY - rect.top;
      const r = g.rows[Math.floor(y / ROW)];
      if (!r) return -1;
      for (let i = 0; i < r.length; i += 3)
        if (x >= r[i + 1] && x < r[i + 1] + r[i + 2]) return r[i];
      return -1;
    };

    canvas.addEventListener('mousemove', (ev) => {
      const n = g.at(ev);
      if (n < 0) hideTip(); else showTip(ev, o.tip(n));
    });
    canvas.addEventListener('mouseleave', hideTip);
    canvas.addEventListener('click', (ev) => {
      const n = g.at(ev);
      if (n >= 0) g.zoom(n);
    });
    return g;
  }
