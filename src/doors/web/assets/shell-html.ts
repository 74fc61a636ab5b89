// The one HTML page: every /web/… path serves it and the script draws the page the path names.
// Nothing here comes from the request, so nothing here needs escaping.
export const SHELL_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>mail4agent</title>
<link rel="icon" href="/web/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/web/assets/app.css">
<script src="/web/assets/app.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/web/inbox" data-nav>mail4agent</a><nav id="nav" aria-label="main"></nav></header>
<main id="main" tabindex="-1"><noscript><p>This mailbox needs JavaScript. All of it is served by this daemon; nothing is loaded from elsewhere.</p></noscript></main>
<div id="live" class="sr-only" aria-live="polite" role="status"></div>
</body>
</html>
`;

export const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#0b57d0"/><path d="M6 10h20v13H6z" fill="none" stroke="#fff" stroke-width="2"/><path d="M6 10l10 8 10-8" fill="none" stroke="#fff" stroke-width="2"/></svg>`;
