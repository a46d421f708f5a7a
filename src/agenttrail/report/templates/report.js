/* agenttrail report: charts, virtual tables, evidence links. Run data is only ever set as
   textContent (never parsed as HTML), so hostile content in a bundle stays text. */
(function () {
  "use strict";
  var ROW = 22;
  var tables = {};
  var state = window.__agenttrail = { ready: false, readyMs: null, charts: 0, errors: [] };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function readJSON(id) {
    var n = document.getElementById(id);
    return n ? JSON.parse(n.textContent) : null;
  }
  function secs(us) { return us === null || us === undefined ? "" : (us / 1e6).toFixed(3); }
  /* columns arrive compact (see _data.py): deltas, and dictionary-encoded strings */
  function undelta(a) {
    var out = new Float64Array(a.length), acc = 0;
    for (var i = 0; i < a.length; i++) { acc += a[i]; out[i] = acc; }
    return out;
  }
  function strings(col) {
    if (col.plain) return col.plain;
    var out = new Array(col.idx.length);
    for (var i = 0; i < out.length; i++) out[i] = col.idx[i] >= 0 ? col.dict[col.idx[i]] : "";
    return out;
  }
  function dur(ms) {
    if (ms === null || ms === undefined) return "";
    if (ms < 1) return ms.toFixed(3) + " ms";
    if (ms < 1000) return ms.toFixed(1) + " ms";
    return (ms / 1000).toFixed(2) + " s";
  }
  function pretty(text, cut) {
    if (!cut) { try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* not JSON */ } }
    return text + (cut ? "\n… (cut; the full value is in the bundle)" : "");
  }
  function kv(pairs) {
    var box = el("div", "kv");
    pairs.forEach(function (p) {
      box.appendChild(el("div", null, p[0]));
      var v = el("div");
      if (p[1] instanceof Node) v.appendChild(p[1]); else v.textContent = p[1] === null ? "" : String(p[1]);
      box.appendChild(v);
    });
    return box;
  }
  function link(href, text) { var a = el("a", null, text); a.setAttribute("href", href); return a; }

  /* ---- virtual table: only the rows in view are in the DOM ---------------------------------- */
  function VTable(root, spec) {
    this.root = root; this.spec = spec; this.n = spec.n; this.view = null;
    this.body = root.querySelector(".vt-body");
    this.spacer = root.querySelector(".vt-spacer");
    this.detail = root.querySelector(".vt-detail");
    this.notice = root.querySelector(".vt-notice");
    this.countEl = root.querySelector(".vt-count");
    this.selected = -1; this.flash = -1; this.pending = false;
    var self = this;
    this.body.addEventListener("scroll", function () { self.schedule(); });
    this.spacer.addEventListener("click", function (e) {
      var r = e.target.closest(".vt-row");
      if (r) self.select(Number(r.dataset.i), false);
    });
    this.setView(null);
  }
  VTable.prototype.count = function () { return this.view ? this.view.length : this.n; };
  VTable.prototype.rowAt = function (k) { return this.view ? this.view[k] : k; };
  VTable.prototype.posOf = function (i) {
    if (!this.view) return i;
    var lo = 0, hi = this.view.length - 1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1, v = this.view[mid];
      if (v === i) return mid;
      if (v < i) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
  };
  VTable.prototype.setView = function (view) {
    this.view = view;
    this.spacer.style.height = (this.count() * ROW) + "px";
    this.countEl.textContent = this.spec.countText(this.count());
    this.render();
  };
  VTable.prototype.schedule = function () {
    if (this.pending) return;
    this.pending = true;
    var self = this;
    requestAnimationFrame(function () { self.pending = false; self.render(); });
  };
  VTable.prototype.render = function () {
    var top = this.body.scrollTop, h = this.body.clientHeight || 440;
    var first = Math.max(0, Math.floor(top / ROW) - 8);
    var last = Math.min(this.count(), Math.ceil((top + h) / ROW) + 8);
    var frag = document.createDocumentFragment();
    for (var k = first; k < last; k++) {
      var i = this.rowAt(k), row = el("div", "vt-row");
      row.style.top = (k * ROW) + "px";
      row.dataset.i = String(i);
      row.dataset.anchor = this.spec.anchor(i);
      var cells = this.spec.cells(i);
      for (var c = 0; c < cells.length; c++) {
        var d = el("div", "c " + cells[c][0], cells[c][1]);
        if (cells[c][2]) d.title = cells[c][2];
        row.appendChild(d);
      }
      if (this.spec.isErr(i)) row.classList.add("err");
      if (i === this.selected) row.classList.add("sel");
      if (i === this.flash) row.classList.add("flash");
      frag.appendChild(row);
    }
    this.spacer.replaceChildren(frag);
  };
  VTable.prototype.select = function (i, reveal) {
    this.selected = i;
    this.detail.replaceChildren(this.spec.detail(i));
    this.detail.hidden = false;
    if (reveal) {
      if (this.posOf(i) < 0) this.spec.resetFilters();
      var k = this.posOf(i);
      this.body.scrollTop = Math.max(0, k * ROW - this.body.clientHeight / 2 + ROW / 2);
      this.flash = i;
    }
    this.render();
  };

  function debounce(fn, ms) {
    var t = null;
    return function () { clearTimeout(t); t = setTimeout(fn, ms); };
  }
  function fillSelect(sel, values, all) {
    sel.replaceChildren(el("option", null, all));
    sel.firstChild.value = "";
    values.forEach(function (v, i) { var o = el("option", null, v); o.value = String(i); sel.appendChild(o); });
  }

  function eventsTable(root) {
    var bid = root.dataset.bid, d = readJSON(root.dataset.src), n = d.seq.length;
    d.seq = undelta(d.seq); d.t = undelta(d.t); d.text = strings(d.text);
    d.err = new Uint8Array(n); d.cut = new Uint8Array(n);
    for (var f = 0; f < n; f++) { d.err[f] = d.flags[f] & 1; d.cut[f] = (d.flags[f] & 2) >> 1; }
    var search = root.querySelector("input[type=search]"), fType = root.querySelector(".f-type"),
      fActor = root.querySelector(".f-actor"), fErr = root.querySelector(".f-err");
    fillSelect(fType, d.types, "all types");
    fillSelect(fActor, d.actors, "all actors");
    var hay = null, index = null;
    var spec = {
      n: n,
      anchor: function (i) { return "event-" + bid + "-" + d.seq[i]; },
      isErr: function (i) { return d.err[i] === 1; },
      countText: function (c) {
        var s = c.toLocaleString("en-US") + " shown";
        if (d.shown < d.total) s += " · " + d.shown.toLocaleString("en-US") + " of " + d.total.toLocaleString("en-US") + " events embedded";
        return s;
      },
      cells: function (i) {
        var sp = d.span[i] >= 0 ? d.spans[d.span[i]] : "";
        return [["c-num", d.seq[i] >= 0 ? d.seq[i] : "line " + (-d.seq[i])], ["c-t", secs(d.t[i])],
          ["c-type", d.type[i] >= 0 ? d.types[d.type[i]] : ""], ["c-actor", d.actor[i] >= 0 ? d.actors[d.actor[i]] : ""],
          ["c-span", sp.slice(0, 16)], ["c-text", d.text[i].slice(0, 400)]];
      },
      detail: function (i) {
        var box = el("div"), sp = d.span[i] >= 0 ? d.spans[d.span[i]] : "";
        box.appendChild(kv([["event", "#" + d.seq[i] + "  " + (d.type[i] >= 0 ? d.types[d.type[i]] : "")],
          ["actor", d.actor[i] >= 0 ? d.actors[d.actor[i]] : ""], ["at", secs(d.t[i]) + " s since start"],
          ["span", sp ? link("#span-" + bid + "-" + sp, sp) : "—"]]));
        box.appendChild(el("pre", null, pretty(d.text[i], d.cut[i] === 1)));
        return box;
      },
      resetFilters: function () { search.value = ""; fType.value = ""; fActor.value = ""; fErr.checked = false; apply(); }
    };
    var t = new VTable(root, spec);
    function apply() {
      var q = search.value.trim().toLowerCase(), ty = fType.value, ac = fActor.value, er = fErr.checked;
      if (!q && !ty && !ac && !er) { t.setView(null); return; }
      if (q && !hay) {
        hay = new Array(n);
        for (var j = 0; j < n; j++) {
          hay[j] = (d.text[j] + " " + (d.type[j] >= 0 ? d.types[d.type[j]] : "") + " " +
            (d.span[j] >= 0 ? d.spans[d.span[j]] : "") + " " + d.seq[j]).toLowerCase();
        }
      }
      var out = new Int32Array(n), m = 0, tyN = ty === "" ? -2 : Number(ty), acN = ac === "" ? -2 : Number(ac);
      for (var i = 0; i < n; i++) {
        if (tyN !== -2 && d.type[i] !== tyN) continue;
        if (acN !== -2 && d.actor[i] !== acN) continue;
        if (er && d.err[i] !== 1) continue;
        if (q && hay[i].indexOf(q) < 0) continue;
        out[m++] = i;
      }
      t.setView(out.subarray(0, m));
    }
    search.addEventListener("input", debounce(apply, 120));
    [fType, fActor, fErr].forEach(function (x) { x.addEventListener("change", apply); });
    t.find = function (key) {
      if (!index) { index = new Map(); for (var i = 0; i < n; i++) index.set(String(d.seq[i]), i); }
      var i2 = index.get(key);
      return i2 === undefined ? -1 : i2;
    };
    t.filterText = function (text) { search.value = text; apply(); };
    t.what = function (key) { return "event #" + key; };
    t.data = d;
    return t;
  }

  function spansTable(root) {
    var bid = root.dataset.bid, d = readJSON(root.dataset.src), n = d.id.length, attrs = d.attrs;
    d.t = undelta(d.t); d.msg = strings(d.msg); d.model = strings(d.model);
    var search = root.querySelector("input[type=search]"), fKind = root.querySelector(".f-kind"),
      fErr = root.querySelector(".f-err");
    fillSelect(fKind, d.kinds, "all kinds");
    var hay = null, index = null;
    function tok(i) { var x = d.tok[i]; return x ? x[0].toLocaleString("en-US") + " / " + x[1].toLocaleString("en-US") : ""; }
    var spec = {
      n: n,
      anchor: function (i) { return "span-" + bid + "-" + d.id[i]; },
      isErr: function (i) { return d.err[i] === 1; },
      countText: function (c) {
        var s = c.toLocaleString("en-US") + " shown";
        if (d.shown < d.total) s += " · " + d.shown.toLocaleString("en-US") + " of " + d.total.toLocaleString("en-US") + " spans embedded";
        return s;
      },
      cells: function (i) {
        var k = d.kind[i] >= 0 ? d.kinds[d.kind[i]] : "";
        return [["c-t", secs(d.t[i])], ["c-dur", dur(d.dur[i])], ["c-kind k-" + k, k],
          ["c-name", d.names[d.name[i]] || "", d.id[i]], ["c-tok", tok(i)],
          ["c-status", d.err[i] ? "error: " + d.msg[i] : ""]];
      },
      detail: function (i) {
        var box = el("div"), p = d.parent[i], pid = p >= 0 ? d.id[p] : (d.parent_id[String(i)] || "");
        var evLink = el("a", null, "show its events");
        evLink.setAttribute("href", "#b" + bid + "-events");
        evLink.addEventListener("click", function () {
          var et = tables["event-" + bid];
          if (et) et.filterText(d.id[i]);
        });
        box.appendChild(kv([["span", d.names[d.name[i]] || ""], ["id", d.id[i]],
          ["parent", pid ? link("#span-" + bid + "-" + pid, p >= 0 ? (d.names[d.name[p]] + " · " + pid) : pid) : "—"],
          ["kind", d.kind[i] >= 0 ? d.kinds[d.kind[i]] : ""], ["start", secs(d.t[i]) + " s since start"],
          ["duration", dur(d.dur[i])], ["tokens in / out", tok(i) || "—"], ["model", d.model[i] || "—"],
          ["status", d.err[i] ? "error: " + d.msg[i] : "ok"], ["events", evLink]]));
        if (attrs[String(i)]) box.appendChild(el("pre", null, pretty(attrs[String(i)], false)));
        return box;
      },
      resetFilters: function () { search.value = ""; fKind.value = ""; fErr.checked = false; apply(); }
    };
    var t = new VTable(root, spec);
    function apply() {
      var q = search.value.trim().toLowerCase(), kd = fKind.value, er = fErr.checked;
      if (!q && !kd && !er) { t.setView(null); return; }
      if (q && !hay) {
        hay = new Array(n);
        for (var j = 0; j < n; j++) hay[j] = ((d.names[d.name[j]] || "") + " " + d.id[j] + " " + d.msg[j] + " " + d.model[j]).toLowerCase();
      }
      var out = new Int32Array(n), m = 0, kN = kd === "" ? -2 : Number(kd);
      for (var i = 0; i < n; i++) {
        if (kN !== -2 && d.kind[i] !== kN) continue;
        if (er && d.err[i] !== 1) continue;
        if (q && hay[i].indexOf(q) < 0) continue;
        out[m++] = i;
      }
      t.setView(out.subarray(0, m));
    }
    search.addEventListener("input", debounce(apply, 120));
    [fKind, fErr].forEach(function (x) { x.addEventListener("change", apply); });
    t.find = function (key) {
      if (!index) { index = new Map(); for (var i = 0; i < n; i++) index.set(d.id[i], i); }
      var i2 = index.get(key);
      return i2 === undefined ? -1 : i2;
    };
    t.filterText = function (text) { search.value = text; apply(); };
    t.what = function (key) { return "span " + key; };
    return t;
  }

  /* ---- evidence links: #event-<bundle>-<seq>, #span-<bundle>-<span id> ----------------------- */
  function go(hash) {
    var m = /^#(event|span)-(\d+)-([^\s]+)$/.exec(decodeURIComponent(hash || ""));
    if (!m) return false;
    var t = tables[m[1] + "-" + m[2]];
    if (!t) return false;
    var i = t.find(m[3]);
    t.notice.textContent = "";
    if (i < 0) {
      t.notice.textContent = t.what(m[3]) + " is not in this report's embedded rows (the report keeps the " +
        "evidence, the errors and the first and last rows); query it with `agenttrail sql`.";
    } else {
      t.select(i, true);
    }
    t.root.scrollIntoView({ block: "start" });
    return true;
  }

  function initCharts() {
    var divs = Array.prototype.slice.call(document.querySelectorAll("div.chart[data-src]"));
    return Promise.all(divs.map(function (div) {
      var spec = readJSON(div.dataset.src);
      return Plotly.newPlot(div, spec.figure.data, spec.figure.layout, spec.config).then(function () {
        state.charts += 1;
        if (div.dataset.bid && div.dataset.key === "timeline") {
          div.on("plotly_click", function (ev) {
            var p = ev && ev.points && ev.points[0];
            if (p && typeof p.customdata === "string") location.hash = "#span-" + div.dataset.bid + "-" + p.customdata;
          });
        }
      });
    }));
  }

  function initLightbox() {
    var box = document.getElementById("lightbox");
    if (!box) return;
    var img = box.querySelector("img"), cap = box.querySelector("p");
    document.querySelectorAll("button.shot").forEach(function (b) {
      b.addEventListener("click", function () {
        img.src = b.querySelector("img").src;
        cap.textContent = b.dataset.caption || "";
        box.showModal();
      });
    });
    box.addEventListener("click", function () { box.close(); });
  }

  function init() {
    document.querySelectorAll(".vt[data-src]").forEach(function (root) {
      var t = root.dataset.kind === "events" ? eventsTable(root) : spansTable(root);
      tables[(root.dataset.kind === "events" ? "event-" : "span-") + root.dataset.bid] = t;
    });
    initLightbox();
    window.addEventListener("hashchange", function () { go(location.hash); });
    document.addEventListener("click", function (e) {
      var a = e.target.closest && e.target.closest("a[href^='#event-'], a[href^='#span-']");
      if (a && a.getAttribute("href") === location.hash) { e.preventDefault(); go(location.hash); }
    });
    var charts = typeof Plotly === "undefined" ? Promise.resolve() : initCharts();
    return charts.then(function () {
      if (location.hash) go(location.hash);
      state.ready = true;
      state.readyMs = performance.now();
      document.documentElement.dataset.ready = "1";
    });
  }

  window.addEventListener("error", function (e) { state.errors.push(String(e.message)); });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
