// benchbook published site: filter the index by paper and outcome; search (pagefind) over http only.
(function () {
  "use strict";
  var paper = document.getElementById("filter-paper");
  var outcome = document.getElementById("filter-outcome");
  var count = document.getElementById("filter-count");
  function apply() {
    var shown = 0;
    document.querySelectorAll(".bb-card").forEach(function (card) {
      var ok = (!paper.value || card.dataset.paper === paper.value) &&
               (!outcome.value || card.dataset.outcome === outcome.value);
      card.hidden = !ok;
      if (ok) { shown += 1; }
    });
    document.querySelectorAll(".bb-paper").forEach(function (sec) {
      sec.hidden = sec.querySelector(".bb-card:not([hidden])") === null;
    });
    count.textContent = shown + " shown";
  }
  if (paper && outcome) {
    paper.addEventListener("change", apply);
    outcome.addEventListener("change", apply);
    apply();
  }
  var search = document.getElementById("search");
  if (!search || search.dataset.search !== "yes") { return; }
  if (location.protocol !== "http:" && location.protocol !== "https:") {
    document.getElementById("search-note").hidden = false;
    return;
  }
  var css = document.createElement("link");
  css.rel = "stylesheet";
  css.href = "pagefind/pagefind-ui.css";
  document.head.appendChild(css);
  var js = document.createElement("script");
  js.src = "pagefind/pagefind-ui.js";
  js.onload = function () {
    new PagefindUI({ element: "#search", showSubResults: true, showImages: false });
  };
  document.head.appendChild(js);
})();
