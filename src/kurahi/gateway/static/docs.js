// Starts Swagger UI (swagger-ui-bundle.js, vendored: static/swagger/vendor.json) on the gateway's
// own schema. A file of its own because the page's policy allows no inline script.
"use strict";

// The curl command Swagger UI prints after "Execute" would spell out the token, on screen and in
// any screenshot or copy of it: the Authorization header is shown as a placeholder instead (the
// request itself is sent unchanged).
const HideTokenInCurl = (system) => ({
  wrapComponents: {
    curl: (Original) => (props) => {
      const request = props.request;
      const shown =
        request && typeof request.hasIn === "function" && request.hasIn(["headers", "Authorization"])
          ? request.setIn(["headers", "Authorization"], "Bearer <token>")
          : request;
      return system.React.createElement(Original, { ...props, request: shown });
    },
  },
});

window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  presets: [SwaggerUIBundle.presets.apis],
  plugins: [HideTokenInCurl],
  layout: "BaseLayout", // no top bar: this page shows this gateway's schema and no other
  queryConfigEnabled: false, // a ?url= in the address must not load another schema
  validatorUrl: null, // the default sends the schema to validator.swagger.io
  persistAuthorization: false, // the token stays in memory, never in localStorage
  deepLinking: false, // a deep link is an <a> inside each operation's toggle button: nested controls
  syntaxHighlight: { activated: true, theme: "idea" }, // dark text on white: the default's colours fail contrast
  displayRequestDuration: true,
});

// Accessible names Swagger UI gets wrong, which no stylesheet can fix: the dialog's close button
// has none, two buttons' names do not contain their visible text, and the token field is named
// "auth-bearer-value". Set as the dialog is drawn; React leaves attributes it did not change alone.
const NAMES = [
  ["button.close-modal", "Close"],
  ['button[aria-label="Apply credentials"]', "Authorize: apply the credentials"],
  ['button[aria-label="Remove authorization"]', "Logout: remove the credentials"],
  ['input[aria-label="auth-bearer-value"]', "Bearer token"],
];

function name() {
  const dialog = document.querySelector("#swagger-ui .dialog-ux"); // all four are in the Authorize dialog
  if (!dialog) return;
  for (const [selector, label] of NAMES) {
    for (const node of dialog.querySelectorAll(selector)) {
      if (node.getAttribute("aria-label") !== label) node.setAttribute("aria-label", label);
    }
  }
}

new MutationObserver(name).observe(document.getElementById("swagger-ui"), { childList: true, subtree: true });
