/*
 * Rundbrief attachments manager: uploads the chosen file with a progress bar.
 * Without JavaScript the form posts normally and the page reloads.
 */
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  if (!form || !window.XMLHttpRequest || !window.FormData) return;
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var bar = document.getElementById("upload-progress");
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    // The server then answers 204 and leaves its message for the next page.
    xhr.setRequestHeader("X-Upload", "1");
    xhr.upload.addEventListener("progress", function (e) {
      if (!e.lengthComputable) return;
      bar.hidden = false;
      bar.value = Math.round((e.loaded / e.total) * 100);
    });
    xhr.addEventListener("load", function () {
      window.location.href = form.action;
    });
    xhr.addEventListener("error", function () {
      form.submit();
    });
    bar.hidden = false;
    bar.value = 0;
    xhr.send(new FormData(form));
  });
})();
