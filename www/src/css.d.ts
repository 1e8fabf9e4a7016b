// Stylesheets imported by the embed bundle arrive as text (esbuild's text loader).
declare module "*.css" {
  const text: string;
  export default text;
}
