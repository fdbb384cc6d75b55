// mrkdwn.js renders Slack's text formats as HTML: mrkdwn (*bold*, _italic_,
// ~strike~, `code`, ```pre```, > quotes, <links|labels>, <@U…> mentions,
// <#C…> channels, <!subteam^S…> groups, <!here>, <!date^…> dates, :emoji:)
// and plain_text (with emoji). Input is Slack-escaped text: a literal <, >
// or & arrives as &lt; &gt; &amp;.
"use strict";

const MD = (() => {
  // The emoji approvalbot uses, and common ones people type.
  const EMOJI = {
    alarm_clock: "⏰", arrow_heading_up: "⤴️", ballot_box_with_check: "☑️", bar_chart: "📊", bell: "🔔",
    busts_in_silhouette: "👥", construction: "🚧", grey_question: "❔", heavy_minus_sign: "➖", hourglass: "⌛",
    hourglass_flowing_sand: "⏳", inbox_tray: "📥", large_orange_circle: "🟠", large_yellow_circle: "🟡",
    large_blue_circle: "🔵", large_green_circle: "🟢", leftwards_arrow_with_hook: "↩️", no_entry: "⛔",
    no_entry_sign: "🚫", red_circle: "🔴", robot_face: "🤖", rotating_light: "🚨", speech_balloon: "💬",
    tada: "🎉", warning: "⚠️", white_check_mark: "✅", white_circle: "⚪", x: "❌", heavy_check_mark: "✔️",
    eyes: "👀", memo: "📝", calendar: "📆", date: "📅", clock3: "🕒", lock: "🔒", key: "🔑", link: "🔗",
    information_source: "ℹ️", bulb: "💡", fire: "🔥", rocket: "🚀", thumbsup: "👍", "+1": "👍", thumbsdown: "👎",
    "-1": "👎", smile: "😄", slightly_smiling_face: "🙂", wave: "👋", pushpin: "📌", mag: "🔍", gear: "⚙️",
    stopwatch: "⏱️", hourglass_done: "⌛", sparkles: "✨", star: "⭐", question: "❓", exclamation: "❗",
    heavy_plus_sign: "➕", arrow_right: "➡️", arrow_left: "⬅️", arrow_up: "⬆️", arrow_down: "⬇️",
    white_large_square: "⬜", black_large_square: "⬛", checkered_flag: "🏁", money_with_wings: "💸",
    moneybag: "💰", chart_with_upwards_trend: "📈", email: "📧", envelope: "✉️", package: "📦", zap: "⚡",
    jobs: "🧑‍💼", floor: "🏢",
  };

  const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December"];
  const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  // unescape turns Slack's &lt; &gt; &amp; back into characters.
  function unescape(s) {
    return s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  }
  function emoji(html) {
    return html.replace(/:([a-z0-9_+-]+):/g, (m, name) =>
      EMOJI[name] ? `<span class="emoji" title=":${name}:">${EMOJI[name]}</span>` : m);
  }

  function ordinal(n) {
    const s = ["th", "st", "nd", "rd"], v = n % 100;
    return n + (s[(v - 20) % 10] || s[v] || s[0]);
  }
  function dayDiff(d, now) {
    const a = new Date(d.getFullYear(), d.getMonth(), d.getDate());
    const b = new Date(now.getFullYear(), now.getMonth(), now.getDate());
    return Math.round((a - b) / 86400000);
  }
  function clock(d, secs) {
    let h = d.getHours() % 12;
    if (h === 0) h = 12;
    const mm = String(d.getMinutes()).padStart(2, "0");
    const ss = secs ? ":" + String(d.getSeconds()).padStart(2, "0") : "";
    return `${h}:${mm}${ss} ${d.getHours() < 12 ? "AM" : "PM"}`;
  }
  function ago(d, now) {
    const s = Math.round((now - d) / 1000), future = s < 0, a = Math.abs(s);
    const units = [[31536000, "year"], [2592000, "month"], [86400, "day"], [3600, "hour"], [60, "minute"]];
    for (const [n, name] of units) {
      if (a >= n) {
        const k = Math.floor(a / n), w = `${k} ${name}${k === 1 ? "" : "s"}`;
        return future ? `in ${w}` : `${w} ago`;
      }
    }
    return future ? "in a few seconds" : "just now";
  }

  // formatDate expands a <!date^…> format in the viewer's time zone, as
  // Slack's clients do.
  function formatDate(unix, format, now) {
    const d = new Date(unix * 1000);
    now = now || new Date();
    const num = `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;
    const long = `${DAYS[d.getDay()]}, ${MONTHS[d.getMonth()]} ${ordinal(d.getDate())}, ${d.getFullYear()}`;
    const plain = `${MONTHS[d.getMonth()]} ${ordinal(d.getDate())}, ${d.getFullYear()}`;
    const short = `${MONTHS[d.getMonth()].slice(0, 3)} ${d.getDate()}, ${d.getFullYear()}`;
    const diff = dayDiff(d, now);
    const pretty = (fallback) => diff === 0 ? "today" : diff === -1 ? "yesterday" : diff === 1 ? "tomorrow" : fallback;
    const tokens = {
      date_num: num, date: plain, date_short: short, date_long: long,
      date_pretty: pretty(plain), date_short_pretty: pretty(short), date_long_pretty: pretty(long),
      time: clock(d, false), time_secs: clock(d, true), ago: ago(d, now),
    };
    return format.replace(/\{([a-z_]+)\}/g, (m, k) => (k in tokens ? tokens[k] : m));
  }

  // token renders one <…> token as HTML.
  function token(body, ctx) {
    const bar = body.indexOf("|");
    const target = bar < 0 ? body : body.slice(0, bar);
    const label = bar < 0 ? "" : body.slice(bar + 1);
    const name = (id) => ctx && ctx.users && ctx.users[id];
    if (target.startsWith("@")) {
      const id = target.slice(1), u = name(id);
      const me = ctx && ctx.me === id ? " me" : "";
      return `<span class="mention${me}" data-user="${esc(id)}">@${esc(label || (u ? u.name : id))}</span>`;
    }
    if (target.startsWith("#")) {
      const id = target.slice(1), c = ctx && ctx.channels && ctx.channels[id];
      return `<a class="mention channel" href="#/c/${esc(id)}">#${esc(label || (c ? c.name : id))}</a>`;
    }
    if (target.startsWith("!subteam^")) {
      const id = target.slice(9), g = ctx && ctx.groups && ctx.groups[id];
      return `<span class="mention group">@${esc((label || (g ? g.handle : id)).replace(/^@/, ""))}</span>`;
    }
    if (target.startsWith("!date^")) {
      const parts = target.slice(6).split("^");
      const unix = Number(parts[0]);
      if (!Number.isFinite(unix) || parts.length < 2) return esc(unescape(label || body));
      const text = esc(formatDate(unix, unescape(parts[1]), ctx && ctx.now));
      const title = esc(new Date(unix * 1000).toString());
      if (parts[2] && safeURL(unescape(parts[2]))) return `<a href="${esc(unescape(parts[2]))}" target="_blank" rel="noopener" title="${title}">${text}</a>`;
      return `<time datetime="${new Date(unix * 1000).toISOString()}" title="${title}">${text}</time>`;
    }
    if (target.startsWith("!")) {
      const what = target.slice(1);
      return `<span class="mention broadcast">@${esc(label || what)}</span>`;
    }
    const url = unescape(target);
    if (!safeURL(url)) return esc(unescape(label || target));
    // Local permalinks open here, in the sandbox.
    const local = url.match(/\/sandbox\/archives\/([^/]+)\/(p\d+)/);
    const href = local ? `#/c/${local[1]}/${local[2]}` : url;
    const ext = local ? "" : ` target="_blank" rel="noopener"`;
    return `<a href="${esc(href)}"${ext}>${label ? emoji(esc(unescape(label))) : esc(url)}</a>`;
  }

  // inline applies bold, italic, strike and emoji to escaped HTML.
  function inline(html) {
    html = html.replace(/(^|[\s(>~_*\u0001])\*(?!\s)([^*\n]+?)\*(?=$|[\s).,!?:;'"<~_\u0001])/g, "$1<b>$2</b>");
    html = html.replace(/(^|[\s(>~*\u0001])_(?!\s)([^_\n]+?)_(?=$|[\s).,!?:;'"<~*\u0001])/g, "$1<i>$2</i>");
    html = html.replace(/(^|[\s(>_*\u0001])~(?!\s)([^~\n]+?)~(?=$|[\s).,!?:;'"<_*\u0001])/g, "$1<s>$2</s>");
    return emoji(html);
  }

  // mrkdwn renders Slack mrkdwn as HTML. Code and tokens are cut out first
  // (as \u0001N\u0001) so formatting never reaches inside them.
  function mrkdwn(text, ctx) {
    const saved = [];
    const keep = (html) => { saved.push(html); return `\u0001${saved.length - 1}\u0001`; };
    let s = String(text || "");
    s = s.replace(/```([\s\S]*?)```/g, (m, code) => keep(`<pre>${esc(unescape(code.replace(/^\n/, "")))}</pre>`));
    s = s.replace(/`([^`\n]+)`/g, (m, code) => keep(`<code>${esc(unescape(code))}</code>`));
    s = s.replace(/<([^<>]+)>/g, (m, body) => keep(token(body, ctx)));
    let html = esc(unescape(s));
    // Quotes: consecutive lines starting with ">".
    const lines = html.split("\n"), out = [];
    let quote = [];
    const flush = () => { if (quote.length) { out.push(`<blockquote>${quote.join("<br>")}</blockquote>`); quote = []; } };
    for (const line of lines) {
      const m = line.match(/^&gt;\s?(.*)$/);
      if (m) { quote.push(inline(m[1])); continue; }
      flush();
      out.push(inline(line) + "\n");
    }
    flush();
    html = out.join("").replace(/\n$/, "").replace(/\n/g, "<br>").replace(/<\/blockquote><br>/g, "</blockquote>");
    for (let i = 0; i < 3 && html.includes("\u0001"); i++) {
      html = html.replace(/\u0001(\d+)\u0001/g, (m, n) => saved[Number(n)]);
    }
    return html;
  }

  // plain renders plain_text: escaped, emoji if asked (Slack's default).
  function plain(text, withEmoji) {
    const html = esc(text || "").replace(/\n/g, "<br>");
    return withEmoji === false ? html : emoji(html);
  }

  // text renders a Block Kit text object.
  function text(obj, ctx) {
    if (!obj) return "";
    if (obj.type === "mrkdwn") return obj.verbatim ? plain(obj.text, false) : mrkdwn(obj.text, ctx);
    return plain(obj.text, obj.emoji);
  }

  // safeURL: only web and mail links are followed; a javascript: (or any
  // other scheme) URL in a message must never run in the sandbox's page.
  function safeURL(u) { return /^(https?:|mailto:)/i.test(String(u || "")); }

  return { mrkdwn, plain, text, esc, formatDate, safeURL, EMOJI };
})();
