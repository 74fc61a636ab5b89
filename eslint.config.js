// Lint: typescript-eslint with type information, so a promise nobody awaits or catches is an error.
import { existsSync } from 'node:fs';
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

// The browser's modules have their own project (DOM, no Node); tsconfig.json excludes them.
const projects = ['./tsconfig.json', './tsconfig.browser.json'].filter((p) => existsSync(new URL(p, import.meta.url)));

export default defineConfig(
  globalIgnores(['dist/', 'node_modules/', 'test/fixtures/', 'bench-results/', 'test-artifacts/', 'scratch/', '.scratch/', '.data/']),
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { project: projects, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // node:test's describe/it/test return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] }] }],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // The memory and SQLite stores implement the async Store contract with synchronous bodies.
      '@typescript-eslint/require-await': 'off',
      // Stripping terminal escapes and control characters out of untrusted text is deliberate.
      'no-control-regex': 'off',
    },
  },
  {
    // Tests and benchmarks read untyped JSON from real daemons and agent programs: `any` there is deliberate.
    files: ['test/**', 'bench/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // The plain .mjs scripts and this file are in no tsconfig: a default project gives them types.
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      parserOptions: { project: null, projectService: { allowDefaultProject: ['*.js', 'scripts/*.mjs', 'test/support/*.mjs'] }, tsconfigRootDir: import.meta.dirname },
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
      },
    },
  },
);
