"use strict";
// report.html's rows are data (output/html.py): this script builds a row's elements only
// when the row is shown, a page of rows at a time, and sets every string it reads as
// text (textContent, never markup), so an answer or an id can never become a tag.
(function () {
  // The rows written for where no script runs: gone, so that each anchor is one row's.
  const unscripted = document.getElementById("static");
  if (unscripted) {
    unscripted.remove();
  }
  const PAGE = 200;
  const form = document.getElementById("filters");
  const shown = document.getElementById("shown");
  const main = document.getElementById("rows");
  const fields = { verdict: "v", category: "c", suite: "s" };

  function read(id) {
    return JSON.parse(document.getElementById(id).textContent);
  }

  const kindLabels = read("kinds");
  // One shape for every row: the full ones as written, the quiet ones from their arrays.
  const rows = read("rows-full");
  for (const row of rows) {
    row.full = true;
    row.cand.t = row.ans.map(function (piece) { return piece[0]; }).join("");
  }
  for (const q of read("rows-quiet")) {
    rows.push({ a: q[0], i: q[1], s: q[2], c: q[3], v: q[4], b: false, k: [], l: [], m: q[5],
      q: q[6], ca: q[7], ba: q[8], cx: q[9], cut: q[10], full: false });
  }
  for (const row of rows) {
    row.a = row.a || "case-" + row.i;  // output/html.py leaves out the default anchor
  }
  const byAnchor = new Map(rows.map(function (row, n) { return [row.a, n]; }));
  const texts = new Array(rows.length);
  const built = new Array(rows.length);
  let matched = [];
  let start = 0;
  let end = 0;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (text !== undefined && text !== null) {
      node.textContent = text;
    }
    return node;
  }

  function add(parent, ...children) {
    for (const child of children) {
      parent.append(child);
    }
    return parent;
  }

  function tag(text) {
    return el("span", "tag", text);
  }

  function pieces(items) {
    const p = el("p", "text");
    for (const [text, claim] of items) {
      if (claim) {
        add(p, el("mark", "claim", text), tag("[" + claim + "]"));
      } else {
        p.append(text);
      }
    }
    return p;
  }

  function passages(items) {
    const box = el("div", "context text");
    if (!items.length) {
      box.textContent = "(empty)";
    }
    for (const [text, supports, claims] of items) {
      if (supports || claims.length) {
        const label = (supports ? "supports" : "") + (supports && claims.length ? " " : "") +
          claims.map(function (n) { return "[" + n + "]"; }).join("");
        add(box, el("mark", supports && !claims.length ? "supports" : "claim", text), tag(label));
      } else {
        box.append(text);
      }
    }
    return box;
  }

  function wordDiff(changes) {
    const p = el("p", "text");
    for (const [op, text, claim] of changes) {
      const mark = claim ? el("mark", "claim", text) : document.createTextNode(text);
      if (op === "del") {
        p.append(el("del", "", text));
      } else if (op === "ins") {
        p.append(add(el("ins"), mark));
      } else {
        p.append(mark);
      }
      p.append(" ");
    }
    return p;
  }

  function readings(side) {
    const table = el("table", "readings");
    table.append(add(el("tr"), el("th", "", "reading"), el("th", "", "value"),
      el("th", "", "reason")));
    for (const [name, value, reason] of side.r) {
      table.append(add(el("tr"), el("td", "", name), el("td", "", value),
        el("td", "", reason || "—")));
    }
    return table;
  }

  function text(value) {
    return el("p", "text", value || "(empty)");
  }

  function pair(left, right) {
    return add(el("div", "answers"), add(el("div"), ...left), add(el("div"), ...right));
  }

  function list(className, items) {
    return add(el("ul", className), ...items.map(function (item) { return el("li", "", item); }));
  }

  function fullBody(row, body) {
    add(body, el("h3", "", "Query"), text(row.q), el("h3", "", "Answers"));
    const cut = function (side) { return side.cut ? " (cut off at max tokens)" : ""; };
    if (row.same) {
      add(body, el("p", "none", "Both versions gave the same answer."),
        row.cand.t ? pieces(row.ans) : text(""));
    } else {
      if (row.d !== null) {
        add(body, wordDiff(row.d), el("p", "legend", "red, struck out: only in the baseline · " +
          "green: only in the candidate · yellow: not in the context"));
      }
      body.append(pair([el("h4", "", "baseline" + cut(row.base)), text(row.base.t)],
        [el("h4", "", "candidate" + cut(row.cand)), row.cand.t ? pieces(row.ans) : text("")]));
    }
    if (row.cl.length) {
      body.append(el("h3", "", "Claims the context does not support"));
      body.append(list("plain", row.cl.map(function ([number, passage, cited]) {
        return "[" + number + "] " + (passage === null ? "nothing in the context mentions it"
          : (cited ? "contradicted by" : "closest in the context") + ": “" + passage + "”");
      })));
    }
    add(body, el("h3", "", "Judge"), pair([el("h4", "", "baseline"), readings(row.base)],
      [el("h4", "", "candidate"), readings(row.cand)]));
    if (row.st.length) {
      const ol = el("ol", "statements");
      for (const [statement, label, span] of row.st) {
        const li = add(el("li", "s-" + label, statement + " "), tag(label.replace(/_/g, " ")));
        if (span) {
          li.append(" — “" + span + "”");
        }
        ol.append(li);
      }
      add(body, el("h3", "", "Statements of the candidate"), ol);
    } else if (row.se) {
      add(body, el("h3", "", "Statements of the candidate"), el("p", "none", row.se));
    }
    if (row.e.length || row.n.length) {
      add(body, el("h3", "", "Errors and notes"), list("plain", row.e.concat(row.n)));
    }
    if (row.l.length) {
      add(body, el("h3", "", "Labels"), list("plain", row.l));
    }
    add(body, el("h3", "", "Context"), passages(row.x), el("p", "legend",
      "green: what the judge cites as support · yellow [n]: the passage closest to, or " +
      "contradicting, claim [n]"));
  }

  function quietBody(row, body) {
    add(body, el("h3", "", "Query"), text(row.q), el("h3", "", "Answers"));
    if (row.ba === null) {
      add(body, el("p", "none", "Both versions gave the same answer."), text(row.ca));
    } else {
      body.append(pair([el("h4", "", "baseline"), text(row.ba)],
        [el("h4", "", "candidate"), text(row.ca)]));
    }
    add(body, el("h3", "", "Context"), add(el("div", "context text"), row.cx || "(empty)"));
    if (row.cut) {
      body.append(el("p", "legend", "Shortened so that every row fits on one page: the whole " +
        "query and context are in the cases file, the answers in answers.jsonl."));
    }
  }

  function fill(n) {
    const details = built[n];
    if (details.dataset.filled) {
      return;
    }
    details.dataset.filled = "true";
    const body = el("div", "body");
    (rows[n].full ? fullBody : quietBody)(rows[n], body);
    details.append(body);
  }

  function element(n) {
    if (built[n]) {
      return built[n];
    }
    const row = rows[n];
    const details = el("details", "row");
    details.id = row.a;
    const summary = add(el("summary"), el("span", "badge v-" + row.v, row.v.replace(/_/g, " ")));
    if (row.b) {
      summary.append(el("span", "blocking", "blocking"));
    }
    for (const kind of row.k) {
      if (Object.prototype.hasOwnProperty.call(kindLabels, kind)) {
        summary.append(el("span", "kind", kindLabels[kind]));
      }
    }
    add(summary, el("span", "id", row.i), el("span", "cat", row.c));
    if (row.s) {
      summary.append(el("span", "suite", "suite " + row.s));
    }
    summary.append(el("span", "move", row.m));
    for (const label of row.l) {
      summary.append(el("span", "label", label));
    }
    details.append(summary);
    details.addEventListener("toggle", function () {
      if (details.open) {
        fill(n);
      }
    });
    built[n] = details;
    return details;
  }

  function searchText(n) {
    if (texts[n] === undefined) {
      const row = rows[n];
      const parts = [row.i, row.q];
      if (row.full) {
        parts.push(row.base.t, row.cand.t, row.se, ...row.e, ...row.n, ...row.l);
        for (const part of row.x) {
          parts.push(part[0]);
        }
        for (const side of [row.base, row.cand]) {
          for (const reading of side.r) {
            parts.push(reading[2]);
          }
        }
        for (const statement of row.st) {
          parts.push(statement[0]);
        }
      } else {
        parts.push(row.ca, row.ba || "", row.cx);
      }
      texts[n] = parts.join("\n").toLowerCase();
    }
    return texts[n];
  }

  function more(label, onclick) {
    const button = el("button", "more", label);
    button.type = "button";
    button.addEventListener("click", onclick);
    return button;
  }

  function render() {
    const nodes = [];
    if (start > 0) {
      nodes.push(more("show the " + Math.min(PAGE, start).toLocaleString("en") +
        " rows before", function () { start = Math.max(0, start - PAGE); render(); }));
    }
    for (let at = start; at < end; at += 1) {
      nodes.push(element(matched[at]));
    }
    if (end < matched.length) {
      nodes.push(more("show " + Math.min(PAGE, matched.length - end).toLocaleString("en") +
        " more (" + (matched.length - end).toLocaleString("en") + " not shown yet)",
      function () { end = Math.min(matched.length, end + PAGE); render(); }));
    }
    main.replaceChildren(...nodes);
    main.dataset.matched = String(matched.length);
    shown.textContent = "showing " + matched.length.toLocaleString("en") + " of " +
      rows.length.toLocaleString("en") + " rows";
  }

  function apply() {
    const wanted = {};
    for (const name of Object.keys(fields)) {
      wanted[name] = form.elements[name].value;
    }
    const blockingOnly = form.elements.blocking.checked;
    const query = form.elements.q.value.trim().toLowerCase();
    matched = [];
    rows.forEach(function (row, n) {
      if (blockingOnly && !row.b) {
        return;
      }
      for (const name of Object.keys(fields)) {
        if (wanted[name] !== "*" && row[fields[name]] !== wanted[name]) {
          return;
        }
      }
      if (query && !searchText(n).includes(query)) {
        return;
      }
      matched.push(n);
    });
    start = 0;
    end = Math.min(PAGE, matched.length);
    render();
  }

  function options(name) {
    const select = form.elements[name];
    const seen = new Map();
    for (const row of rows) {
      const value = row[fields[name]];
      seen.set(value, (seen.get(value) || 0) + 1);
    }
    for (const [value, count] of Array.from(seen).sort()) {
      const option = el("option", "", (value || "(none)") + " (" + count + ")");
      option.value = value;
      select.append(option);
    }
    if (seen.size < 2 && name === "suite") {
      select.closest("label").hidden = true;
    }
  }

  // A link to report.html#case-… opens that row, wherever the filters and pages had it.
  function open(anchor) {
    const n = byAnchor.get(anchor);
    if (n === undefined) {
      return;
    }
    let at = matched.indexOf(n);
    if (at < 0) {
      form.reset();
      apply();
      at = matched.indexOf(n);
    }
    if (at < start || at >= end) {
      start = at - (at % PAGE);
      end = Math.min(matched.length, start + PAGE);
      render();
    }
    const details = element(n);
    fill(n);
    for (const linked of document.querySelectorAll("details.linked")) {
      linked.classList.remove("linked");
    }
    details.classList.add("linked");  // the row the link named stands out
    details.open = true;
    details.scrollIntoView();
  }

  function fromHash() {
    if (location.hash.length > 1) {
      open(location.hash.slice(1));
    }
  }

  let timer = null;
  form.addEventListener("change", apply);
  form.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(apply, 150);
  });
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  window.addEventListener("hashchange", fromHash);
  Object.keys(fields).forEach(options);
  apply();
  fromHash();
  document.body.dataset.ready = "true";
})();
