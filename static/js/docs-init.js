// Starts Swagger UI on /openapi.json from this server's own copy (no CDN, no inline script).
window.SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
});
