/*
 * Rundbrief mail editor (views.ContentEditorField), the same in every mail form.
 *
 * - The placeholder picker inserts the clicked placeholder ({{vorname}} …) at
 *   the cursor of the last focused text field (subject, preheader or content;
 *   the content when none was focused), or into the rich-text editor, and
 *   tells htmx through an input event, so the live preview follows. Without
 *   JavaScript the picker is a readable list of what can be typed.
 * - The format (Markdown, HTML, rich text) switches the content field: rich
 *   text is Trix (static/trix.umd.min.js, loaded before this file), created
 *   here after its wording is set to German; its HTML goes into a hidden input
 *   that the server sanitises. Switching from rich text to HTML takes its HTML
 *   along.
 * - Images dropped, pasted or picked in the rich-text editor are uploaded to
 *   /editor/images and shown from their signed public URL.
 * - The AI assistant's "take over" buttons put a suggestion into its field.
 */
(function () {
  "use strict";

  var last = null;
  var trixReady = false;

  function changed(el) {
    el.dispatchEvent(new Event("input", { bubbles: true }));
  }

  function richFor(root) {
    return root && root.querySelector("[data-rich-editor]");
  }

  function trixFor(root) {
    var rich = richFor(root);
    return rich && rich.querySelector("trix-editor");
  }

  // setupTrix sets Trix's German wording and image handling once.
  function setupTrix(rich) {
    if (trixReady || !window.Trix) return;
    trixReady = true;
    try {
      Object.assign(window.Trix.config.lang, JSON.parse(rich.getAttribute("data-trix-lang") || "{}"));
    } catch (e) {
      /* keep Trix's English wording */
    }
    // Mails show no file name and size under an image.
    window.Trix.config.attachments.preview.caption = { name: false, size: false };
  }

  // createTrix builds the toolbar and the editor of a rich-text field; Trix
  // fills the toolbar from its (now German) wording when it connects.
  function createTrix(rich) {
    if (!window.Trix || rich.querySelector("trix-editor")) return;
    setupTrix(rich);
    var toolbar = document.createElement("trix-toolbar");
    toolbar.id = rich.getAttribute("data-toolbar");
    var editor = document.createElement("trix-editor");
    editor.setAttribute("input", rich.getAttribute("data-input"));
    editor.setAttribute("toolbar", toolbar.id);
    editor.setAttribute("aria-labelledby", rich.getAttribute("data-input") + "-label");
    editor.setAttribute("data-upload-url", rich.getAttribute("data-upload-url"));
    editor.setAttribute("data-testid", "trix-editor");
    editor.className = "trix-content";
    var hint = rich.querySelector(".field-hint");
    rich.insertBefore(toolbar, hint);
    rich.insertBefore(editor, hint);
  }

  function showFormat(root, format) {
    var source = root.querySelector("[data-source-editor]");
    var rich = richFor(root);
    root.setAttribute("data-format", format);
    if (source) source.hidden = format === "richtext";
    if (rich) {
      rich.hidden = format !== "richtext";
      if (format === "richtext") createTrix(rich);
    }
  }

  function richError(rich, msg) {
    var p = rich && rich.querySelector("[data-rich-error]");
    if (!p) return;
    p.textContent = msg || "";
    p.hidden = !msg;
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-content-editor]").forEach(function (root) {
      showFormat(root, root.getAttribute("data-format") || "markdown");
    });
  });

  document.addEventListener("focusin", function (ev) {
    var el = ev.target;
    if (el && el.matches && (el.matches("[data-placeholder-target]") || el.matches("trix-editor"))) last = el;
  });

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("[data-insert]");
    if (btn) {
      ev.preventDefault();
      insertPlaceholder(btn);
      return;
    }
    var apply = ev.target.closest && ev.target.closest("[data-ai-apply]");
    if (apply) {
      ev.preventDefault();
      applySuggestion(apply);
    }
  });

  function insertPlaceholder(btn) {
    var text = btn.getAttribute("data-insert");
    var root = btn.closest("[data-content-editor]") || document;
    var field = last || document.getElementById("field-content");
    if (root.getAttribute && root.getAttribute("data-format") === "richtext" && (!last || last.matches("trix-editor"))) {
      var trix = trixFor(root);
      if (trix && trix.editor) {
        trix.focus();
        trix.editor.insertString(text);
        return;
      }
    }
    if (!field || field.matches("trix-editor")) return;
    var start = field.selectionStart;
    var end = field.selectionEnd;
    if (typeof start !== "number" || typeof end !== "number") {
      start = end = field.value.length;
    }
    field.focus();
    field.setRangeText(text, start, end, "end");
    changed(field);
  }

  // applySuggestion puts an AI suggestion into the subject, the preheader, or
  // the content in the editor's current format.
  function applySuggestion(btn) {
    var target = btn.getAttribute("data-ai-apply");
    var value = btn.getAttribute("data-ai-value") || "";
    var form = btn.closest("form") || document;
    if (target === "subject" || target === "preheader") {
      var input = form.querySelector('[name="' + target + '"]');
      if (input) {
        input.value = value;
        changed(input);
      }
      return;
    }
    var root = form.querySelector("[data-content-editor]");
    if (!root) return;
    if (root.getAttribute("data-format") === "richtext") {
      var trix = trixFor(root);
      if (trix && trix.editor) {
        trix.editor.loadHTML(value);
        return;
      }
    }
    var area = root.querySelector("[data-source-editor] textarea");
    if (area) {
      area.value = value;
      changed(area);
    }
  }

  document.addEventListener("change", function (ev) {
    var radio = ev.target;
    if (!radio || radio.type !== "radio" || !/(^|_)format$/.test(radio.name)) return;
    var set = radio.closest("[data-hint-target]");
    var hint = set && document.getElementById(set.getAttribute("data-hint-target"));
    var text = set && set.getAttribute("data-hint-" + radio.value);
    if (hint && text) hint.textContent = text;
    var root = radio.closest("[data-content-editor]");
    if (!root) return;
    var before = root.getAttribute("data-format");
    var rich = richFor(root);
    var area = root.querySelector("[data-source-editor] textarea");
    var hidden = rich && document.getElementById(rich.getAttribute("data-input"));
    // Rich text to HTML keeps the text written; HTML to rich text too.
    if (before === "richtext" && radio.value === "html" && area && hidden) area.value = hidden.value;
    if (before === "html" && radio.value === "richtext" && area && hidden && area.value.trim() !== "") {
      hidden.value = area.value;
      var trix = trixFor(root);
      if (trix && trix.editor) trix.editor.loadHTML(area.value);
    }
    showFormat(root, radio.value);
  });

  // The preview follows the rich-text editor as it follows the textarea.
  document.addEventListener("trix-change", function (ev) {
    var hidden = document.getElementById(ev.target.getAttribute("input"));
    if (hidden) changed(hidden);
  });

  // Only images; other files are refused before they are uploaded.
  document.addEventListener("trix-file-accept", function (ev) {
    if (!/^image\/(png|jpeg|gif|webp)$/.test(ev.file.type)) {
      ev.preventDefault();
      var rich = ev.target.closest("[data-rich-editor]");
      richError(rich, rich && rich.getAttribute("data-image-only"));
    }
  });

  document.addEventListener("trix-attachment-add", function (ev) {
    var att = ev.attachment;
    if (!att.file) return;
    var editor = ev.target;
    var rich = editor.closest("[data-rich-editor]");
    richError(rich, "");
    var data = new FormData();
    data.append("file", att.file, att.file.name);
    var xhr = new XMLHttpRequest();
    xhr.open("POST", editor.getAttribute("data-upload-url"), true);
    xhr.upload.addEventListener("progress", function (e) {
      if (e.lengthComputable) att.setUploadProgress((e.loaded / e.total) * 100);
    });
    xhr.addEventListener("load", function () {
      var res = {};
      try {
        res = JSON.parse(xhr.responseText);
      } catch (e) {
        /* not JSON: a failure */
      }
      if (xhr.status === 201 && res.url) {
        att.setAttributes({ url: res.url, alt: res.alt || "" });
      } else {
        att.remove();
        richError(rich, res.error || (rich && rich.getAttribute("data-upload-failed")));
      }
    });
    xhr.addEventListener("error", function () {
      att.remove();
      richError(rich, rich && rich.getAttribute("data-upload-failed"));
    });
    xhr.send(data);
  });
})();
