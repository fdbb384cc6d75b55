// blockkit.js renders Block Kit blocks as DOM, with working controls.
//
// render(blocks, ctx) returns an element. ctx carries:
//   md:      the mrkdwn context (users, channels, groups, me)
//   state:   the surface's page state {block_id: {action_id: entered}}, kept
//            by the caller so values survive re-rendering
//   errors:  modal field errors by block_id
//   act(block, element, entered): a control was used and Slack would send
//            block_actions (buttons, menus, pickers outside input blocks;
//            inside input blocks only with dispatch_action)
//   confirm(dialog): a promise resolved true when the person confirms
"use strict";

const BK = (() => {
  const h = (tag, attrs, ...kids) => {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "html") el.innerHTML = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "className") el.className = v;
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  };
  const txt = (obj, ctx) => MD.text(obj, ctx.md);
  const optText = (o) => (o && o.text ? o.text.text : "");

  function entered(ctx, block, el) {
    const s = ctx.state[block.block_id];
    return s ? s[el.action_id] : undefined;
  }
  function setEntered(ctx, block, el, value) {
    (ctx.state[block.block_id] = ctx.state[block.block_id] || {})[el.action_id] = value;
  }
  // use records a value and, where Slack would, tells the app at once.
  function use(ctx, block, el, value, inInput) {
    setEntered(ctx, block, el, value);
    if (!inInput || block.dispatch_action) ctx.act(block, el, value);
  }
  function ids(block, el) {
    return { "data-block-id": block.block_id, "data-action-id": el.action_id, "data-type": el.type };
  }

  function button(block, el, ctx) {
    const cls = "bk-btn" + (el.style ? " " + el.style : "");
    return h("button", Object.assign({
      className: cls, type: "button", html: MD.plain(optText(el), el.text && el.text.emoji),
      onclick: async (ev) => {
        ev.preventDefault();
        if (el.confirm && !(await ctx.confirm(el.confirm))) return;
        if (el.url && MD.safeURL(el.url)) window.open(el.url, "_blank", "noopener");
        ctx.act(block, el, {});
      },
    }, ids(block, el)));
  }

  function optionNodes(el, selected) {
    const opt = (o) => h("option", { value: o.value, selected: selected.includes(o.value) }, optText(o));
    if (el.option_groups) {
      return el.option_groups.map((g) => h("optgroup", { label: optText({ text: g.label }) }, (g.options || []).map(opt)));
    }
    return (el.options || []).map(opt);
  }
  function initialValues(el) {
    if (el.initial_option) return [el.initial_option.value];
    if (el.initial_options) return el.initial_options.map((o) => o.value);
    return [];
  }

  function staticSelect(block, el, ctx, inInput) {
    const e = entered(ctx, block, el);
    const selected = e ? e.selected || [] : initialValues(el);
    const placeholder = el.placeholder ? optText({ text: el.placeholder }) : "Select an item";
    const sel = h("select", Object.assign({
      className: "bk-select",
      onchange: () => use(ctx, block, el, { selected: sel.value ? [sel.value] : [] }, inInput),
    }, ids(block, el)),
    h("option", { value: "", disabled: true, selected: selected.length === 0 }, placeholder),
    optionNodes(el, selected));
    return sel;
  }

  // usersSelect picks one of the workspace's people (users_select).
  function usersSelect(block, el, ctx, inInput) {
    const e = entered(ctx, block, el);
    const selected = e ? e.selected || [] : (el.initial_user ? [el.initial_user] : []);
    const users = Object.values((ctx.md && ctx.md.users) || {}).filter((u) => !u.is_bot);
    const placeholder = el.placeholder ? optText({ text: el.placeholder }) : "Select a user";
    const sel = h("select", Object.assign({
      className: "bk-select",
      onchange: () => use(ctx, block, el, { selected: sel.value ? [sel.value] : [] }, inInput),
    }, ids(block, el)),
    h("option", { value: "", disabled: true, selected: selected.length === 0 }, placeholder),
    users.map((u) => h("option", { value: u.id, selected: selected.includes(u.id) }, `${u.real_name || u.name} (@${u.name})`)));
    return sel;
  }

  // multiSelect opens a list of checkboxes; like Slack's menu it sends
  // its choice when it closes.
  function multiSelect(block, el, ctx, inInput) {
    const e = entered(ctx, block, el);
    const selected = e ? e.selected || [] : initialValues(el);
    const all = (el.options || []).concat(...(el.option_groups || []).map((g) => g.options || []));
    const label = () => {
      const names = all.filter((o) => selected.includes(o.value)).map(optText);
      return names.length ? names.join(", ") : (el.placeholder ? optText({ text: el.placeholder }) : "Select items");
    };
    const summary = h("summary", { className: "bk-select" }, label());
    const boxes = all.map((o) => h("label", { className: "bk-check" },
      h("input", { type: "checkbox", value: o.value, checked: selected.includes(o.value) }), " " + optText(o)));
    const details = h("details", Object.assign({ className: "bk-multi" }, ids(block, el)), summary,
      h("div", { className: "bk-menu" }, boxes));
    details.addEventListener("toggle", () => {
      if (details.open) return;
      const now = boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value);
      if (now.join("\u0000") === selected.join("\u0000")) return;
      selected.splice(0, selected.length, ...now);
      summary.textContent = label();
      use(ctx, block, el, { selected: now }, inInput);
    });
    return details;
  }

  function datepicker(block, el, ctx, inInput) {
    const e = entered(ctx, block, el);
    const value = e ? e.date || "" : el.initial_date || "";
    const input = h("input", Object.assign({
      type: "date", className: "bk-input", value,
      onchange: () => use(ctx, block, el, { date: input.value }, inInput),
    }, ids(block, el)));
    return input;
  }

  function timepicker(block, el, ctx, inInput) {
    const e = entered(ctx, block, el);
    const input = h("input", Object.assign({
      type: "time", className: "bk-input", value: e ? e.time || "" : el.initial_time || "",
      onchange: () => use(ctx, block, el, { time: input.value }, inInput),
    }, ids(block, el)));
    return input;
  }

  // datetimepicker shows the moment in the reader's zone and sends it as
  // Slack does: unix seconds.
  function datetimepicker(block, el, ctx, inInput) {
    const e = entered(ctx, block, el);
    const secs = e ? e.date_time : el.initial_date_time;
    const pad = (n) => String(n).padStart(2, "0");
    const local = (s) => {
      if (s === undefined || s === null) return "";
      const d = new Date(s * 1000);
      return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
    };
    const input = h("input", Object.assign({
      type: "datetime-local", className: "bk-input", value: local(secs),
      onchange: () => {
        const t = input.value ? Math.floor(new Date(input.value).getTime() / 1000) : undefined;
        use(ctx, block, el, t === undefined ? {} : { date_time: t }, inInput);
      },
    }, ids(block, el)));
    return input;
  }

  // overflow sends the option picked; a confirm dialog on the menu asks
  // first, as Slack's does.
  function overflow(block, el, ctx) {
    const sel = h("select", Object.assign({
      className: "bk-overflow", title: "More actions",
      onchange: async () => {
        const v = sel.value;
        sel.value = "";
        if (el.confirm && !(await ctx.confirm(el.confirm))) return;
        ctx.act(block, el, { selected: [v] });
      },
    }, ids(block, el)), h("option", { value: "", selected: true }, "⋯"), optionNodes(el, []));
    return sel;
  }

  function choices(block, el, ctx, inInput, radio) {
    const e = entered(ctx, block, el);
    const selected = e ? e.selected || [] : initialValues(el);
    const name = `${block.block_id}/${el.action_id}`;
    const wrap = h("div", Object.assign({ className: "bk-choices" }, ids(block, el)));
    for (const o of el.options || []) {
      const input = h("input", { type: radio ? "radio" : "checkbox", name, value: o.value, checked: selected.includes(o.value) });
      input.addEventListener("change", () => {
        const now = [...wrap.querySelectorAll("input")].filter((i) => i.checked).map((i) => i.value);
        use(ctx, block, el, { selected: now }, inInput);
      });
      wrap.append(h("label", { className: "bk-check" }, input, h("span", { html: " " + txt(o.text, ctx) }),
        o.description ? h("div", { className: "bk-desc", html: txt(o.description, ctx) }) : null));
    }
    return wrap;
  }

  function textInput(block, el, ctx, number) {
    const e = entered(ctx, block, el);
    const value = e ? (e.value ?? "") : el.initial_value ?? "";
    const attrs = Object.assign({
      className: "bk-input", placeholder: el.placeholder ? el.placeholder.text : "",
      oninput: (ev) => setEntered(ctx, block, el, { value: ev.target.value }),
    }, ids(block, el));
    if (number) {
      attrs.inputmode = el.is_decimal_allowed ? "decimal" : "numeric";
      attrs.type = "text";
    }
    if (!number && el.max_length) attrs.maxlength = el.max_length;
    const input = !number && el.multiline ? h("textarea", Object.assign(attrs, { rows: 4 })) : h("input", attrs);
    input.value = value;
    if (el.dispatch_action_config || block.dispatch_action) {
      input.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); ctx.act(block, el, { value: input.value }); }
      });
    }
    return input;
  }

  // element renders an interactive element.
  function element(block, el, ctx, inInput) {
    switch (el.type) {
      case "button": return button(block, el, ctx);
      case "static_select": return staticSelect(block, el, ctx, inInput);
      case "users_select": return usersSelect(block, el, ctx, inInput);
      case "multi_static_select": return multiSelect(block, el, ctx, inInput);
      case "datepicker": return datepicker(block, el, ctx, inInput);
      case "timepicker": return timepicker(block, el, ctx, inInput);
      case "datetimepicker": return datetimepicker(block, el, ctx, inInput);
      case "overflow": return overflow(block, el, ctx);
      case "checkboxes": return choices(block, el, ctx, inInput, false);
      case "radio_buttons": return choices(block, el, ctx, inInput, true);
      case "plain_text_input": case "email_text_input": case "url_text_input":
        return textInput(block, el, ctx, false);
      case "number_input": return textInput(block, el, ctx, true);
      case "image": return h("img", { className: "bk-thumb", src: el.image_url, alt: el.alt_text, title: el.alt_text });
    }
    return h("span", { className: "bk-unsupported" }, `[${el.type}]`);
  }

  function section(b, ctx) {
    const body = h("div", { className: "bk-section-body" });
    if (b.text) body.append(h("div", { className: "bk-text", html: txt(b.text, ctx) }));
    if (b.fields) {
      body.append(h("div", { className: "bk-fields" }, b.fields.map((f) => h("div", { className: "bk-field", html: txt(f, ctx) }))));
    }
    const acc = b.accessory ? h("div", { className: "bk-accessory" }, element(b, b.accessory, ctx, false)) : null;
    return h("div", { className: "bk-section" }, body, acc);
  }

  function input(b, ctx) {
    const err = ctx.errors && ctx.errors[b.block_id];
    return h("div", { className: "bk-input-block" + (err ? " has-error" : ""), "data-block-id": b.block_id },
      h("label", { className: "bk-label" }, h("span", { html: txt(b.label, ctx) }),
        b.optional ? h("span", { className: "bk-optional" }, " (optional)") : null),
      element(b, b.element, ctx, true),
      b.hint ? h("div", { className: "bk-hint", html: txt(b.hint, ctx) }) : null,
      err ? h("div", { className: "bk-error" }, err) : null);
  }

  function richText(b, ctx) {
    const inlineEl = (x) => {
      if (x.type === "text") {
        let s = MD.plain(x.text);
        const st = x.style || {};
        if (st.code) s = `<code>${s}</code>`;
        if (st.bold) s = `<b>${s}</b>`;
        if (st.italic) s = `<i>${s}</i>`;
        if (st.strike) s = `<s>${s}</s>`;
        return s;
      }
      if (x.type === "link") {
        if (!MD.safeURL(x.url)) return MD.esc(x.text || x.url);
        return `<a href="${MD.esc(x.url)}" target="_blank" rel="noopener">${MD.esc(x.text || x.url)}</a>`;
      }
      if (x.type === "user") return MD.mrkdwn(`<@${x.user_id}>`, ctx.md);
      if (x.type === "channel") return MD.mrkdwn(`<#${x.channel_id}>`, ctx.md);
      if (x.type === "emoji") return MD.plain(`:${x.name}:`);
      return "";
    };
    const part = (p) => {
      const inner = (p.elements || []).map((x) => (x.elements ? part(x) : inlineEl(x))).join("");
      switch (p.type) {
        case "rich_text_preformatted": return `<pre>${inner}</pre>`;
        case "rich_text_quote": return `<blockquote>${inner}</blockquote>`;
        case "rich_text_list": {
          const tag = p.style === "ordered" ? "ol" : "ul";
          return `<${tag}>${(p.elements || []).map((x) => `<li>${part(x)}</li>`).join("")}</${tag}>`;
        }
        case "rich_text_section": return inner;
      }
      return inner;
    };
    return h("div", { className: "bk-text", html: (b.elements || []).map(part).join("") });
  }

  // block renders one block.
  function block(b, ctx) {
    switch (b.type) {
      case "header": return h("div", { className: "bk-header", html: txt(b.text, ctx) });
      case "section": return section(b, ctx);
      case "divider": return h("hr", { className: "bk-divider" });
      case "context":
        return h("div", { className: "bk-context" }, (b.elements || []).map((e) => e.type === "image"
          ? h("img", { className: "bk-context-img", src: e.image_url, alt: e.alt_text, title: e.alt_text })
          : h("span", { html: txt(e, ctx) })));
      case "actions": {
        const row = h("div", { className: "bk-actions", "data-block-id": b.block_id },
          (b.elements || []).map((el) => element(b, el, ctx, false)));
        const note = ctx.notes && ctx.notes[b.block_id];
        return note ? h("div", {}, row, h("div", { className: "bk-ack-error" }, "⚠️ " + note)) : row;
      }
      case "input": return input(b, ctx);
      case "image":
        return h("figure", { className: "bk-image" }, b.title ? h("figcaption", { html: txt(b.title, ctx) }) : null,
          h("img", { src: b.image_url, alt: b.alt_text, title: b.alt_text }));
      case "rich_text": return richText(b, ctx);
    }
    return h("div", { className: "bk-unsupported" }, `[${b.type} block]`);
  }

  function render(blocks, ctx) {
    const wrap = h("div", { className: "bk" });
    for (const b of blocks || []) {
      const el = block(b, ctx);
      if (b.block_id && !el.hasAttribute("data-block-id")) el.setAttribute("data-block-id", b.block_id);
      wrap.append(el);
    }
    return wrap;
  }

  return { render, h };
})();
