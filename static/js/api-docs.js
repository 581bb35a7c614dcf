// The API reference page: Swagger UI (vendored) on the app's OpenAPI schema. A file, not an inline
// script, so the Content-Security-Policy keeps script-src 'self'.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var root = document.getElementById("swagger-ui");
    window.ui = window.SwaggerUIBundle({
      url: root.dataset.openapiUrl,
      domNode: root,
      layout: "BaseLayout",
      deepLinking: true,
      presets: [window.SwaggerUIBundle.presets.apis],
      // No call to the public validator: nothing leaves the site.
      validatorUrl: null,
      persistAuthorization: false,
      tryItOutEnabled: false,
    });
  });
})();
