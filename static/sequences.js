/*
 * Rundbrief sequence builder: drag a day of the timeline by its handle onto
 * another day to move it to that day's place. The drop posts the new
 * position to the address the ↑/↓ buttons post to (they stay, for keyboard
 * users and browsers without JavaScript) and reloads the page, which shows
 * the days renumbered as stored.
 */
(function () {
  "use strict";
  var list = document.querySelector("[data-sequence-timeline]");
  if (!list || !window.fetch) return;
  list.classList.add("sortable");
  var dragged = null;

  function dayOf(el) {
    return el && el.closest ? el.closest("li[data-move-url]") : null;
  }
  function clearTargets() {
    var marked = list.querySelectorAll(".drop-target");
    for (var i = 0; i < marked.length; i++) marked[i].classList.remove("drop-target");
  }

  list.addEventListener("dragstart", function (e) {
    if (!e.target.classList || !e.target.classList.contains("drag-handle")) return;
    dragged = dayOf(e.target);
    if (!dragged) return;
    dragged.classList.add("dragging");
    e.dataTransfer.effectAllowed = "move";
    e.dataTransfer.setData("text/plain", dragged.id); // Firefox starts no drag without data
    e.dataTransfer.setDragImage(dragged, 0, 0);
  });
  list.addEventListener("dragover", function (e) {
    var day = dayOf(e.target);
    if (!dragged || !day || day === dragged) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "move";
    clearTargets();
    day.classList.add("drop-target");
  });
  list.addEventListener("dragend", function () {
    if (dragged) dragged.classList.remove("dragging");
    dragged = null;
    clearTargets();
  });
  list.addEventListener("drop", function (e) {
    var day = dayOf(e.target);
    if (!dragged || !day || day === dragged) return;
    e.preventDefault();
    var url = dragged.getAttribute("data-move-url") + "?to=" + encodeURIComponent(day.getAttribute("data-position"));
    fetch(url, { method: "POST", credentials: "same-origin" }).then(
      function () { window.location.reload(); },
      function () { window.location.reload(); }
    );
  });
})();
