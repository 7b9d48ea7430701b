/*
 * Rundbrief newsletter editor. The placeholder picker inserts the clicked
 * placeholder ({{vorname}} …) at the cursor of the last focused text field of
 * the editor (subject, preheader or content; the content when none was
 * focused) and tells htmx through an input event, so the live preview follows.
 * Without JavaScript the picker is a readable list of what can be typed.
 * Switching the format (Markdown or HTML) swaps the content field's hint.
 */
(function () {
  "use strict";

  var last = null;

  document.addEventListener("focusin", function (ev) {
    var el = ev.target;
    if (el && el.matches && el.matches("[data-placeholder-target]")) last = el;
  });

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("[data-insert]");
    if (!btn) return;
    ev.preventDefault();
    var field = last || document.getElementById("field-content");
    if (!field) return;
    var text = btn.getAttribute("data-insert");
    var start = field.selectionStart;
    var end = field.selectionEnd;
    if (typeof start !== "number" || typeof end !== "number") {
      start = end = field.value.length;
    }
    field.focus();
    field.setRangeText(text, start, end, "end");
    field.dispatchEvent(new Event("input", { bubbles: true }));
  });

  document.addEventListener("change", function (ev) {
    var radio = ev.target;
    if (!radio || radio.name !== "format") return;
    var set = radio.closest("[data-hint-target]");
    var hint = set && document.getElementById(set.getAttribute("data-hint-target"));
    var text = set && set.getAttribute("data-hint-" + radio.value);
    if (hint && text) hint.textContent = text;
  });
})();
