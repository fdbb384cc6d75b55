// app.js is the sandbox page: an emulated Slack workspace seen by one member
// at a time. It renders what the server's /api/state says and sends what
// the member does to /api/*, where the sandbox turns it into the signed
// requests Slack would send the bot. A server-sent events stream says when
// to fetch the state again.
"use strict";

(() => {
  const { h } = BK;
  const $ = (sel) => document.querySelector(sel);
  const params = new URLSearchParams(location.search);
  const app = {
    me: params.get("user") || localStorage.getItem("sandbox.user") || "",
    data: null,
    entered: {}, // surface key → {block_id: {action_id: entered}}: what the member set, not yet sent
    notes: {}, // surface key → {block_id: text}: acks Slack would have reported as failed
    modalKey: "", paneKey: "", navKey: "", usersKey: "",
    loading: false, again: false, homeOpenedFor: "",
    modalError: "",
  };

  async function api(path, body) {
    const opts = body ? { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) } : {};
    const r = await fetch(path, opts);
    const j = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(j.error || r.statusText);
    return j;
  }

  function toast(text) {
    const t = h("div", { className: "toast" }, text);
    $("#toasts").append(t);
    setTimeout(() => t.remove(), 6000);
  }

  // load fetches the state and renders it; calls during a fetch fold into
  // one more fetch afterwards.
  async function load() {
    if (app.loading) { app.again = true; return; }
    app.loading = true;
    try {
      do {
        app.again = false;
        const me = app.me;
        const data = await api("api/state?user=" + encodeURIComponent(me));
        if (me !== app.me) { app.again = true; continue; } // the member switched meanwhile
        app.data = data;
        app.me = data.me;
        render();
      } while (app.again);
    } catch (e) {
      toast("Could not load the sandbox: " + e.message);
    } finally {
      app.loading = false;
    }
  }

  function route() {
    const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
    if (parts[0] === "c" && parts[1]) return { kind: "conv", id: parts[1], focus: parts[2] || "" };
    if (parts[0] === "app") return { kind: parts[1] === "messages" ? "dm" : "home" };
    if (["inbox", "log", "settings"].includes(parts[0])) return { kind: parts[0] };
    return { kind: "conv", id: "", focus: "" };
  }

  function mdContext() {
    const d = app.data, users = {}, channels = {}, groups = {};
    for (const u of d.users) users[u.id] = u;
    for (const c of d.channels) channels[c.id] = c;
    for (const g of d.groups || []) groups[g.id] = g;
    return { users, channels, groups, me: d.me };
  }

  function render() {
    renderUsers();
    renderNav();
    renderPane();
    renderModal();
  }

  function renderUsers() {
    const d = app.data;
    const people = d.users.filter((u) => !u.is_bot);
    const key = JSON.stringify(people) + d.me;
    $("#team-name").textContent = d.team.name;
    if (key === app.usersKey) return;
    app.usersKey = key;
    const sel = $("#user-switch");
    sel.replaceChildren(...people.map((u) => h("option", { value: u.id, selected: u.id === d.me },
      `${u.real_name}${u.title ? " · " + u.title : ""}`)));
    const me = people.find((u) => u.id === d.me);
    $("#me-detail").textContent = me ? `@${me.name}${me.email ? " · " + me.email : ""} · ${me.id}` : "";
  }

  function renderNav() {
    const d = app.data, r = route();
    const convs = d.channels.filter((c) => !c.dm);
    const current = r.kind === "conv" ? (r.id || (convs[0] && convs[0].id)) : "";
    const failed = d.calls.filter((c) => c.error || c.status !== 200).length;
    const key = JSON.stringify([convs.map((c) => [c.id, c.messages.length]), current, r.kind, d.inbox.length, failed, d.notices.length]);
    if (key === app.navKey) return;
    app.navKey = key;
    const item = (href, label, active, extra) => h("a", { href, className: "nav-item" + (active ? " active" : "") }, label,
      extra ? h("span", { className: "count" }, extra) : null);
    $("#nav").replaceChildren(
      h("div", { className: "nav-title" }, "Channels"),
      ...convs.map((c) => item(`#/c/${c.id}`, (c.is_private ? "🔒 " : "# ") + c.name, c.id === current,
        c.messages.length ? String(c.messages.length) : "")),
      h("div", { className: "nav-title" }, "Apps"),
      item("#/app/home", `🤖 ${d.team.bot_name} · Home`, r.kind === "home"),
      item("#/app/messages", `🤖 ${d.team.bot_name} · Messages`, r.kind === "dm"),
      h("div", { className: "nav-title" }, "Sandbox"),
      item("#/inbox", "📥 Callback inbox", r.kind === "inbox", d.inbox.length ? String(d.inbox.length) : ""),
      item("#/log", "📜 Slack API log", r.kind === "log", failed + d.notices.length ? `${failed + d.notices.length} ⚠` : ""),
      item("#/settings", "⚙️ Workspace & settings", r.kind === "settings"));
  }

  function clockOf(ts) {
    const d = new Date(Number(ts) * 1000);
    return MD.formatDate(d.getTime() / 1000, "{time}");
  }

  function confirmDialog(c) {
    return new Promise((resolve) => {
      const md = mdContext();
      const done = (ok) => { layer.remove(); resolve(ok); };
      const layer = h("div", { className: "overlay confirm-layer" },
        h("div", { className: "modal confirm", role: "alertdialog" },
          h("div", { className: "modal-head" }, h("span", { className: "modal-title", html: MD.text(c.title, md) })),
          h("div", { className: "modal-body", html: MD.text(c.text, md) }),
          h("div", { className: "modal-foot" },
            h("button", { className: "bk-btn", type: "button", onclick: () => done(false) }, c.deny ? c.deny.text : "Cancel"),
            h("button", { className: "bk-btn confirm-yes " + (c.style || "primary"), type: "button", onclick: () => done(true) },
              c.confirm ? c.confirm.text : "Confirm"))));
      document.body.append(layer);
    });
  }

  // act sends a control's use; a failed ack shows under its block, as
  // Slack shows an app that did not respond.
  async function act(where, key, block, el, entered) {
    const body = Object.assign({
      user: app.me, block_id: block.block_id, action_id: el.action_id, entered, state: app.entered[key] || {},
    }, where);
    const notes = (app.notes[key] = app.notes[key] || {});
    document.body.classList.add("busy");
    try {
      const res = await api("api/act", body);
      if (res.ok) delete notes[block.block_id];
      else notes[block.block_id] = `${app.data.team.bot_name} did not respond: ${res.error}`;
    } catch (e) {
      notes[block.block_id] = e.message;
    } finally {
      document.body.classList.remove("busy");
    }
    app.paneKey = "";
    app.modalKey = null;
    load();
  }

  function surfaceContext(key, where, errors) {
    app.entered[key] = app.entered[key] || {};
    return {
      md: mdContext(), state: app.entered[key], errors, notes: app.notes[key],
      act: (b, el, e) => act(where, key, b, el, e), confirm: confirmDialog,
    };
  }

  function avatar(name, bot) {
    return h("div", { className: "avatar" + (bot ? " bot" : "") }, bot ? "🤖" : (name || "?").slice(0, 1).toUpperCase());
  }

  function messageEl(m, conv) {
    const d = app.data, md = mdContext();
    const bot = m.user === d.team.bot_user_id;
    const author = md.users[m.user];
    const key = `m:${conv.id}/${m.ts}`;
    const ctx = surfaceContext(key, { surface: "message", channel: conv.id, ts: m.ts });
    const content = m.blocks && m.blocks.length ? BK.render(m.blocks, ctx) : h("div", { className: "bk-text", html: MD.mrkdwn(m.text, md) });
    return h("div", { className: "msg" + (m.thread_ts && m.thread_ts !== m.ts ? " reply" : ""), "data-ts": m.ts,
      "data-channel": conv.id, id: "p" + m.ts.replace(".", "") },
    avatar(author ? author.real_name : m.user, bot),
    h("div", { className: "msg-body" },
      h("div", { className: "msg-head" },
        h("b", {}, bot ? d.team.bot_name : (author ? author.real_name : m.user)), bot ? h("span", { className: "badge" }, "APP") : null,
        h("span", { className: "msg-time", title: m.ts }, clockOf(m.ts)),
        m.edited ? h("span", { className: "edited" }, "(edited)") : null,
        m.thread_ts && m.thread_ts !== m.ts ? h("span", { className: "edited" }, "↳ in thread") : null),
      content));
  }

  function ephemeralEl(e) {
    const d = app.data;
    const key = `e:${e.id}`;
    const ctx = surfaceContext(key, { surface: "ephemeral", channel: e.channel, ephemeral: e.id });
    const slackbot = e.from === "slackbot";
    const content = e.blocks && e.blocks.length ? BK.render(e.blocks, ctx) : h("div", { className: "bk-text", html: MD.mrkdwn(e.text, ctx.md) });
    return h("div", { className: "msg ephemeral", "data-ephemeral": e.id, "data-ts": e.ts },
      avatar(slackbot ? "S" : "", !slackbot),
      h("div", { className: "msg-body" },
        h("div", { className: "msg-head" }, h("b", {}, slackbot ? "Slackbot" : d.team.bot_name),
          slackbot ? null : h("span", { className: "badge" }, "APP"),
          h("span", { className: "msg-time" }, clockOf(e.ts)),
          h("span", { className: "only-you" }, `👁 Only visible to you · ${e.source}`),
          h("a", { href: "#", className: "dismiss", onclick: (ev) => { ev.preventDefault(); dismiss(e.id); } }, "Dismiss")),
        content));
  }

  async function dismiss(id) {
    try { await api("api/dismiss", { user: app.me, id }); } catch (e) { toast(e.message); }
  }

  function convPane(conv) {
    const d = app.data;
    const items = conv.messages.map((m) => ({ ts: m.thread_ts && m.thread_ts !== m.ts ? m.thread_ts + "+" + m.ts : m.ts, el: () => messageEl(m, conv) }));
    for (const e of d.ephemerals.filter((x) => x.channel === conv.id)) items.push({ ts: e.ts, el: () => ephemeralEl(e) });
    items.sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
    const list = h("div", { className: "messages" }, items.map((i) => i.el()));
    if (!items.length) {
      list.append(h("div", { className: "empty" }, conv.dm
        ? `Nothing here yet. ${d.team.bot_name} writes to you here (reminders, escalations).`
        : "No messages yet. Post a decision request to the bot (see the README's quickstart), and it appears here."));
    }
    return list;
  }

  function homePane() {
    const d = app.data;
    if (app.homeOpenedFor !== d.me) {
      app.homeOpenedFor = d.me;
      api("api/home", { user: d.me }).then((res) => { if (!res.ok) toast(`app_home_opened: ${res.error}`); }, (e) => toast(e.message));
    }
    if (!d.home) return h("div", { className: "empty" }, `Opening ${d.team.bot_name}'s Home tab… (the app publishes it when you open it)`);
    const key = `h:${d.home.id}`;
    return h("div", { className: "home" }, BK.render(d.home.blocks, surfaceContext(key, { surface: "home", view: d.home.id })));
  }

  function inboxPane() {
    const d = app.data;
    const url = new URL("inbox", location.href.split("#")[0].split("?")[0]).href;
    return h("div", { className: "inbox" },
      h("p", { className: "hint" }, "Decision responses approvalbot delivers to ", h("code", {}, url),
        " land here, with their Standard Webhooks signature checked against the callback secret. Point a request's ",
        h("code", {}, "handoff.response_url"), " at it."),
      d.inbox.length ? null : h("div", { className: "empty" }, "Nothing received yet."),
      d.inbox.slice().reverse().map((x) => h("div", { className: "delivery", "data-delivery": x.id },
        h("div", { className: "delivery-head" },
          h("span", { className: "sig " + (x.verified ? "ok" : "bad") }, x.verified ? "✔ signature verified" : "✘ signature invalid: " + x.verify_note),
          h("span", {}, ` POST ${x.path} · ${new Date(x.at).toLocaleTimeString()} · answered ${x.status}`)),
        h("table", { className: "headers" }, Object.entries(x.headers).map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v)))),
        h("pre", { className: "body" }, x.body))));
  }

  function logPane() {
    const d = app.data;
    return h("div", { className: "log" },
      h("p", { className: "hint" }, "The bot's latest Slack Web API calls, as the emulator answered them. The emulator refuses what Slack would: invalid Block Kit (",
        h("code", {}, "invalid_blocks"), " with the reasons), posts faster than one per second per channel (429 with Retry-After, if pacing is on), unknown channels and users."),
      d.notices.length ? h("div", { className: "notices" }, h("h3", {}, "Noticed by the sandbox"), d.notices.slice().reverse().map((n) => h("div", { className: "notice" }, n))) : null,
      h("table", { className: "calls" }, h("tr", {}, h("th", {}, "time"), h("th", {}, "method"), h("th", {}, "status"), h("th", {}, "error")),
        d.calls.slice().reverse().map((c) => h("tr", { className: c.error || c.status !== 200 ? "failed" : "" },
          h("td", {}, new Date(c.at).toLocaleTimeString()), h("td", {}, c.method), h("td", {}, String(c.status)),
          h("td", {}, c.error || "", c.detail ? h("pre", {}, JSON.stringify(c.detail, null, 2)) : null)))));
  }

  function settingsPane() {
    const d = app.data;
    const pacing = h("input", { type: "checkbox", id: "pacing", checked: d.pacing, onchange: async () => {
      try { await api("api/settings", { pacing: pacing.checked }); } catch (e) { toast(e.message); }
    } });
    return h("div", { className: "settings" },
      h("h3", {}, "Slack's rules"),
      h("label", { className: "setting" }, pacing, " Enforce one message per second per channel (chat.postMessage answers 429 with Retry-After)"),
      h("p", { className: "hint" }, "Block Kit limits and the 3-second ack deadline are always enforced."),
      h("h3", {}, "Members"),
      h("table", { className: "calls" }, h("tr", {}, h("th", {}, "id"), h("th", {}, "name"), h("th", {}, "title"), h("th", {}, "email")),
        d.users.filter((u) => !u.is_bot).map((u) => h("tr", {}, h("td", {}, u.id), h("td", {}, `${u.real_name} (@${u.name})`), h("td", {}, u.title || ""), h("td", {}, u.email || "")))),
      h("h3", {}, "User groups"),
      (d.groups || []).map((g) => h("div", {}, `@${g.handle} (${g.id}): `, g.members.map((m) => (mdContext().users[m] || { name: m }).name).join(", "))),
      h("p", { className: "hint" }, "Set SANDBOX_WORKSPACE to a JSON file to choose your own members, channels and user groups (see the README)."));
  }

  function renderPane() {
    const d = app.data, r = route();
    let conv = null, title = "", pane;
    if (r.kind === "conv") conv = d.channels.find((c) => c.id === r.id && !c.dm) || d.channels.find((c) => !c.dm);
    if (r.kind === "dm") conv = d.channels.find((c) => c.dm);
    const key = JSON.stringify([r, d.me, conv, d.ephemerals.filter((e) => conv && e.channel === conv.id), r.kind === "home" ? d.home : null,
      ["inbox", "log", "settings"].includes(r.kind) ? [d.inbox, d.calls, d.notices, d.pacing] : null, app.notes]);
    if (key === app.paneKey) return;
    app.paneKey = key;
    const scroller = $("#pane");
    const atBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
    const before = scroller.scrollTop;
    if (conv) {
      title = conv.dm ? `${d.team.bot_name} · Messages` : (conv.is_private ? "🔒 " : "# ") + conv.name;
      pane = convPane(conv);
    } else if (r.kind === "home") { title = `${d.team.bot_name} · Home`; pane = homePane(); }
    else if (r.kind === "inbox") { title = "Callback inbox"; pane = inboxPane(); }
    else if (r.kind === "log") { title = "Slack API log"; pane = logPane(); }
    else { title = "Workspace & settings"; pane = settingsPane(); }
    const sub = conv && !conv.dm && !conv.bot_member ? ` · ${d.team.bot_name} is not in this channel` : "";
    $("#pane-title").textContent = title + sub;
    document.title = `${title} · approvalbot sandbox`;
    scroller.replaceChildren(pane);
    $("#composer").hidden = !conv;
    app.conv = conv;
    if (r.focus && conv) {
      const target = document.getElementById(r.focus);
      if (target && app.focused !== r.focus) {
        app.focused = r.focus;
        target.classList.add("focus");
        target.scrollIntoView({ block: "center" });
        return;
      }
    }
    scroller.scrollTop = atBottom || app.lastRoute !== location.hash ? scroller.scrollHeight : before;
    app.lastRoute = location.hash;
  }

  function renderModal() {
    const d = app.data;
    const top = d.modals && d.modals.length ? d.modals[d.modals.length - 1] : null;
    const key = top ? JSON.stringify([top.id, top.hash, top.errors, app.modalError, d.me]) : "";
    if (key === app.modalKey) return;
    app.modalKey = key;
    const layer = $("#overlay");
    if (!top) { layer.replaceChildren(); layer.hidden = true; app.modalError = ""; return; }
    const v = top.view, skey = `v:${top.id}`;
    const ctx = surfaceContext(skey, { surface: "modal", view: top.id }, top.errors);
    const close = async () => {
      try { await api("api/close", { user: app.me, view: top.id }); } catch (e) { toast(e.message); }
      app.modalError = "";
      load();
    };
    const submit = async (ev) => {
      ev.preventDefault();
      const btn = ev.submitter || ev.target;
      btn.disabled = true;
      try {
        const res = await api("api/submit", { user: app.me, view: top.id, state: app.entered[skey] || {} });
        app.modalError = res.ok ? "" : res.error;
        if (res.errors) top.errors = res.errors;
      } catch (e) {
        app.modalError = e.message;
      }
      app.modalKey = null;
      load();
    };
    layer.replaceChildren(h("form", { className: "modal", role: "dialog", "data-view-id": top.id, onsubmit: submit },
      h("div", { className: "modal-head" },
        h("span", { className: "modal-title", html: MD.plain(v.title ? v.title.text : "") }),
        h("button", { type: "button", className: "modal-x", title: "Close", onclick: close }, "×")),
      h("div", { className: "modal-body" },
        app.modalError ? h("div", { className: "modal-error" }, "⚠️ " + app.modalError) : null,
        BK.render(top.blocks, ctx)),
      h("div", { className: "modal-foot" },
        h("button", { type: "button", className: "bk-btn modal-close", onclick: close }, v.close ? v.close.text : "Cancel"),
        v.submit ? h("button", { type: "submit", className: "bk-btn primary modal-submit" }, v.submit.text) : null)));
    layer.hidden = false;
    const first = layer.querySelector("textarea, input");
    if (first) first.focus();
  }

  function setup() {
    $("#user-switch").addEventListener("change", (ev) => {
      app.me = ev.target.value;
      localStorage.setItem("sandbox.user", app.me);
      const u = new URL(location.href);
      u.searchParams.set("user", app.me);
      history.replaceState(null, "", u);
      app.paneKey = app.navKey = app.usersKey = ""; app.modalKey = null;
      app.homeOpenedFor = "";
      load();
    });
    $("#command-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const input = $("#command-input");
      const text = input.value.trim();
      if (!text || !app.conv) return;
      if (!text.startsWith("/")) { toast(`Only slash commands are sent to the app here, e.g. ${app.data.command} help`); return; }
      input.value = "";
      try { await api("api/command", { user: app.me, channel: app.conv.id, text }); } catch (e) { toast(e.message); }
      load();
    });
    window.addEventListener("hashchange", () => { app.paneKey = app.navKey = ""; app.homeOpenedFor = ""; render(); });
    const live = $("#live");
    const es = new EventSource("api/events");
    es.addEventListener("change", load);
    es.onopen = () => { live.textContent = "● live"; live.className = "live on"; load(); };
    es.onerror = () => { live.textContent = "○ reconnecting…"; live.className = "live off"; };
    load();
  }

  document.addEventListener("DOMContentLoaded", setup);
})();
