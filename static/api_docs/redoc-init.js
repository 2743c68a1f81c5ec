"use strict";
// Redoc for /api/schema, started from a file of this origin (the pages allow no inline script).
(function () {
  const container = document.getElementById("redoc-container");
  // Search indexes in a blob: Web Worker, which the Content-Security-Policy refuses.
  Redoc.init(container.dataset.schemaUrl, { disableSearch: true, hideDownloadButton: false }, container);
})();
